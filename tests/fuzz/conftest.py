"""Hypothesis profiles for the fuzz suite.

``ci`` (the default) runs a short pass that fits the CI budget; ``long`` is the full run of
``scripts/fuzz``. Pick one with TORCHSMITH_FUZZ_PROFILE=ci|long (TORCHSMITH_FUZZ_EXAMPLES
overrides the number of examples). Minimal failing inputs found by long runs are kept as
``@example`` cases on the tests and in test_regressions.py.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
settings.register_profile(
    "ci", max_examples=30, deadline=None, derandomize=True, suppress_health_check=_SLOW_OK
)
settings.register_profile(
    "long",
    max_examples=int(os.environ.get("TORCHSMITH_FUZZ_EXAMPLES", "2000")),
    deadline=None,
    suppress_health_check=_SLOW_OK,
    database=None,
)
settings.load_profile(os.environ.get("TORCHSMITH_FUZZ_PROFILE", "ci"))
