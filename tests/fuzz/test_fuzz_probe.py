"""Property tests over the probe reader and the planner behind it: any JSON (or bytes) either
gives a Probe that plans, or one ProbeFileError line (exit 3)."""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from tests.fuzz.contract import check_inprocess, run_main
from torchsmith.errors import ProbeFileError
from torchsmith.probe.io import parse_probe

PROBE = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "h200-linux" / "doctor.json").read_text()
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(["9", "9.0.0", "9.0a", "x.y", "12.0", "", "0", "-1", "NaN", "1e999"]),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _leaves(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(doc, dict):
        return [p for k, v in doc.items() for p in _leaves(v, (*path, k))] or [path]
    if isinstance(doc, list):
        return [p for i, v in enumerate(doc) for p in _leaves(v, (*path, i))] or [path]
    return [path]


LEAVES = [p for p in _leaves(PROBE["data"]) if p]


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    doc = copy.deepcopy(doc)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


def _plans(raw: bytes) -> None:
    """parse_probe gives a Probe or one ProbeFileError line; plan --json keeps the contract."""
    try:
        parse_probe(raw, "fuzz.json")
    except ProbeFileError as exc:
        assert "\n" not in exc.message  # noqa: PT017 (a property, not a raise check)
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "probe.json"
        file.write_bytes(raw)
        code, out, err = run_main("plan", "--probe", str(file), "--json")
    check_inprocess(code, err, out)
    assert code in (0, 3), out


@given(st.binary(max_size=300))
@example(b"[" * 100_000)
@example(b'{"data": {"host": ' + b"9" * 5000 + b"}}")
@example(b"\xff\xfe")
def test_any_bytes(raw: bytes) -> None:
    _plans(raw)


@given(values)
def test_any_json(doc: Any) -> None:
    _plans(json.dumps(doc).encode())


@given(st.sampled_from(LEAVES), values)
@example(("gpus", 0, "compute_capability"), "9.0a")
@example(("gpus", 0, "compute_capability"), "\uff11\uff12.\uff10")
@example(("host", "ram_total_bytes"), 0)
@example(("gpus", 0, "name"), "A" * 5000)
def test_real_probe_with_one_value_changed(path: tuple[Any, ...], value: Any) -> None:
    doc = {**PROBE, "data": _replace(PROBE["data"], path, value)}
    _plans(json.dumps(doc).encode())
