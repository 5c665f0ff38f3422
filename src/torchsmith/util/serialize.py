"""Dataclasses to JSON-able values and back, with type checking on the way in.

``from_dict`` validates a parsed JSON value against a dataclass's type hints, so a
malformed probe file fails with a message that names the offending field instead of
a traceback deep inside a planner.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import re
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar, get_args, get_origin, get_type_hints

T = TypeVar("T")

MAX_INT = 2**63 - 1  # integers in JSON inputs: byte counts, indices; anything beyond is not real
MAX_STRING = 4096  # a path or message longer than this is not one a tool wrote
MAX_ITEMS = 10_000  # items in one list or object


class DecodeError(ValueError):
    """A JSON value does not fit the expected type; ``path`` names where."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or '<root>'}: {message}")
        self.path = path


def to_jsonable(value: Any) -> Any:
    """Convert dataclasses, enums, tuples and mappings to plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [to_jsonable(v) for v in value]
        return sorted(items) if isinstance(value, (set, frozenset)) else items
    return value


# A lone surrogate: what os.fsdecode makes of a path byte that is not UTF-8 (b"\xff" -> "\udcff").
SURROGATE = re.compile("[\ud800-\udfff]")


def json_text(value: Any, **options: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, **options)`` that always encodes to valid UTF-8:
    non-ASCII text stays readable, and a lone surrogate, which UTF-8 cannot carry, is written as
    its JSON escape (``\\udcff``), so a path that is not UTF-8 reads back as the same ``str``."""
    text = json.dumps(value, ensure_ascii=False, **options)
    return SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def from_dict(cls: type[T], data: Any, path: str = "") -> T:
    """Build dataclass ``cls`` from ``data``; unknown keys are ignored, absent ones default."""
    return typing.cast(T, _decode(cls, data, path))


def _decode(tp: Any, value: Any, path: str) -> Any:
    origin = get_origin(tp)
    if tp is Any:
        return value
    if origin is typing.Union or origin is types.UnionType:
        options = get_args(tp)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _decode(option, value, path)
            except DecodeError as exc:
                errors.append(str(exc))
        raise DecodeError(path, f"does not match {tp}: {'; '.join(errors)}")
    if origin is typing.Literal:
        if value not in get_args(tp):
            raise DecodeError(path, f"expected one of {get_args(tp)}, got {value!r}")
        return value
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _decode_dataclass(tp, value, path)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            raise DecodeError(path, f"expected one of {[m.value for m in tp]}") from None
    if origin in (list, tuple):
        if not isinstance(value, list):
            raise DecodeError(path, f"expected a list, got {type(value).__name__}")
        if len(value) > MAX_ITEMS:
            raise DecodeError(path, f"more than {MAX_ITEMS} items")
        args = get_args(tp)
        item = args[0] if args else Any
        items = [_decode(item, v, f"{path}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, dict):
            raise DecodeError(path, f"expected an object, got {type(value).__name__}")
        if len(value) > MAX_ITEMS:
            raise DecodeError(path, f"more than {MAX_ITEMS} entries")
        _, vt = get_args(tp) or (str, Any)
        return {str(k): _decode(vt, v, f"{path}.{k}") for k, v in value.items()}
    return _decode_scalar(tp, value, path)


def _decode_scalar(tp: Any, value: Any, path: str) -> Any:
    if tp is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, int) and abs(value) > MAX_INT:
            raise DecodeError(path, "number out of range")
        number = float(value)
        if not math.isfinite(number):
            raise DecodeError(path, "expected a finite number")
        return number
    if tp is int and isinstance(value, bool):
        raise DecodeError(path, "expected an integer, got a boolean")
    if tp is int and isinstance(value, int) and abs(value) > MAX_INT:
        raise DecodeError(path, "integer out of range")
    if tp is str and isinstance(value, str) and len(value) > MAX_STRING:
        raise DecodeError(path, f"string longer than {MAX_STRING} characters")
    if isinstance(tp, type) and isinstance(value, tp):
        return value
    raise DecodeError(path, f"expected {getattr(tp, '__name__', tp)}, got {type(value).__name__}")


def _decode_dataclass(cls: type[Any], value: Any, path: str) -> Any:
    if not isinstance(value, dict):
        raise DecodeError(path, f"expected an object, got {type(value).__name__}")
    hints = get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        where = f"{path}.{field.name}" if path else field.name
        if field.name in value:
            kwargs[field.name] = _decode(hints[field.name], value[field.name], where)
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise DecodeError(where, "missing")
    return cls(**kwargs)
