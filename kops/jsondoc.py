"""Strict, typed access to parsed JSON, in the manner of Kafka's `DecodeJson`.

Kafka reads znodes with Jackson's tree model and typed accessors: an Int must be a JSON integer in range, a
String must be a JSON string, nothing is coerced. kops decodes znodes and the files of Kafka's own tools this way,
so a value Kafka would reject is rejected here too, with the dotted location of the offending field. Callers turn
`ShapeError` into an error that names the file or znode. kops's own files are declared in kops/formats/.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)

_REQUIRED: Any = object()


class ShapeError(ValueError):
    """A JSON value is not of the shape a reader requires. The message names the field."""


def _reject_constant(name: str) -> float:
    raise ShapeError(f"{name} is not valid JSON")


def parse_json(data: bytes | str) -> Any:
    """Parse UTF-8 JSON as Jackson does by default: NaN/Infinity and invalid UTF-8 are errors."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ShapeError(f"not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(data, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ShapeError(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise ShapeError("not valid JSON: nested too deeply") from None


def dumps_compact(value: Any) -> bytes:
    """Compact UTF-8 JSON as Jackson writes it (no spaces, non-ASCII kept as UTF-8)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def dumps_document(value: Any) -> bytes:
    """A kops file's bytes: sorted keys, two-space indentation, UTF-8, a final newline, byte for byte what
    `json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)` writes. orjson writes it because the
    standard library's C encoder is bypassed whenever it indents: a million-partition snapshot took 30 s in
    pure Python. Keys must be strings and numbers finite (the declarations see to both)."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE)


def _describe(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def as_object(value: Any, at: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ShapeError(f"{at} must be a JSON object, got {_describe(value)}")
    return value


def as_int(value: Any, at: str, bounds: tuple[int, int] = INT32) -> int:
    if type(value) is not int:
        raise ShapeError(f"{at} must be a JSON integer, got {_describe(value)}")
    if not bounds[0] <= value <= bounds[1]:
        raise ShapeError(f"{at} is out of range: {value}")
    return value


def as_str(value: Any, at: str) -> str:
    if type(value) is not str:
        raise ShapeError(f"{at} must be a JSON string, got {_describe(value)}")
    return value


def as_bool(value: Any, at: str) -> bool:
    if type(value) is not bool:
        raise ShapeError(f"{at} must be true or false, got {_describe(value)}")
    return value


def as_list(value: Any, at: str) -> list[Any]:
    if not isinstance(value, list):
        raise ShapeError(f"{at} must be a JSON array, got {_describe(value)}")
    return value


def as_size(value: Any, at: str) -> int:
    """A byte count: an integer from 0 (int64)."""
    return as_int(value, at, (0, INT64[1]))


def check_format(value: Any, expected: str) -> None:
    """`kops-plan/2` and the like: a newer version than this kops reads says to upgrade kops."""
    family, _, version = expected.rpartition("/")
    if value == expected:
        return
    if isinstance(value, str) and value.startswith(family + "/"):
        found = value.rpartition("/")[2]
        if found.isdigit() and int(found) > int(version):
            raise ShapeError(f"format is {value}, newer than this kops reads ({expected}): upgrade kops")
        raise ShapeError(f"format is {value}, which this kops does not read (it reads {expected})")
    raise ShapeError(f"format is {_describe(value)}, expected {expected!r}")


def as_int_list(value: Any, at: str) -> tuple[int, ...]:
    return tuple(as_int(v, f"{at}[{i}]") for i, v in enumerate(as_list(value, at)))


def as_str_list(value: Any, at: str) -> tuple[str, ...]:
    return tuple(as_str(v, f"{at}[{i}]") for i, v in enumerate(as_list(value, at)))


def as_str_map(value: Any, at: str) -> dict[str, str]:
    return {k: as_str(v, f"{at}.{k}") for k, v in as_object(value, at).items()}


def as_int_key(key: str, at: str) -> int:
    """A map key holding a decimal integer (partition ids in the topic znode, parsed by Kafka with toInt)."""
    try:
        number = int(key, 10)
    except ValueError:
        raise ShapeError(f"{at} has key {key!r}, which is not an integer") from None
    if not INT32[0] <= number <= INT32[1] or key.strip() != key or "_" in key:
        raise ShapeError(f"{at} has key {key!r}, which is not an integer")
    return number


def field(obj: dict[str, Any], key: str, at: str, default: Any = _REQUIRED) -> Any:
    """The raw value of `obj[key]`; a missing required key is a ShapeError naming it."""
    as_object(obj, at or "document")
    if key in obj:
        return obj[key]
    if default is _REQUIRED:
        raise ShapeError(f"{at}.{key} is missing" if at else f"{key} is missing")
    return default


def join(at: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{at}[{key}]"
    return f"{at}.{key}" if at else key
