"""Values computed from what a rule read: ``derive = { name = "function:field" }`` in a rule.

Functions: ``sm_to_cc`` (sm_120 -> 12.0), ``cuda_int`` (11040 -> 11.4, the form drivers report),
or a lookup table from the rule files, keyed by the value itself ("format"), or for an arch by
"compute_90a" -> "90a", else by its digits ("compute_120a" -> "120").
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_DIGITS = re.compile(r"(\d+)")
_ARCH = re.compile(r"(\d+)[a-z]?")  # "compute_90a": "90a", else "90"


def sm_to_cc(value: str) -> str | None:
    found = _DIGITS.search(value)
    if not found or len(found.group(1)) < 2:
        return None
    digits = found.group(1)
    return f"{digits[:-1]}.{digits[-1]}"


def cuda_int(value: str) -> str | None:
    if not value.isdigit():
        return None
    number = int(value)
    return f"{number // 1000}.{(number % 1000) // 10}"


def derive_values(
    derive: Mapping[str, tuple[str, str]],
    values: Mapping[str, str],
    tables: Mapping[str, Mapping[str, str]],
) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, (function, source) in derive.items():
        raw = values.get(source)
        if raw is None:
            continue
        result: str | None
        if function == "sm_to_cc":
            result = sm_to_cc(raw)
        elif function == "cuda_int":
            result = cuda_int(raw)
        elif function in tables:
            table = tables[function]
            found = _ARCH.search(raw)
            result = table.get(raw) or (
                (table.get(found.group(0)) or table.get(found.group(1))) if found else None
            )
        else:
            result = None
        if result is not None:
            out[name] = result
    return out
