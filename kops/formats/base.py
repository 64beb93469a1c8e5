"""What every kops file format shares: strict scalar types, the base model, and one error per bad file.

Values are never coerced (a JSON string is not a number, `true` is not 1, `1.0` is not an integer), as Kafka's
own `DecodeJson` reads znodes; NaN and Infinity are not JSON. pydantic's errors are turned into one
`ShapeError` naming the JSON location (`batches[0].moves[3].to[1]`) in the words the rest of kops uses, never
pydantic's names for its validators or a union's branches.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict, ValidationError
from pydantic_core import ErrorDetails, PydanticCustomError

from kops.jsondoc import INT32, INT64, ShapeError, check_format

Int = Annotated[int, Strict(), Field(ge=INT32[0], le=INT32[1])]
Long = Annotated[int, Strict(), Field(ge=INT64[0], le=INT64[1])]
Id = Annotated[int, Strict(), Field(ge=0, le=INT32[1])]  # broker ids and partition numbers
Size = Annotated[int, Strict(), Field(ge=0, le=INT64[1])]  # byte counts and counters
Rate = Annotated[int, Strict(), Field(gt=0, le=INT64[1])]  # bytes per second
Measured = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]  # a measured rate: 0 or fractional too
Seconds = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]  # a duration
Positive = Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]
Number = Annotated[float, Strict(), Field(allow_inf_nan=False)]
Text = Annotated[str, Strict()]
Flag = Annotated[bool, Strict()]
IdKey = Annotated[str, Field(pattern=r"^(0|[1-9][0-9]{0,9})$")]  # a broker id or partition number as a map key
IntKey = Annotated[str, Field(pattern=r"^-?(0|[1-9][0-9]{0,9})$")]


def _unique(values: list[int]) -> list[int]:
    if len(set(values)) != len(values):
        raise PydanticCustomError("kops", "names a broker twice: {values}", {"values": values})
    return values


Replicas = Annotated[list[Id], Field(min_length=1), AfterValidator(_unique)]  # first = preferred leader


class Doc(BaseModel):
    """A JSON object of a kops file: unknown keys are refused (a typo, or a newer kops's file)."""

    # defer_build: a model's validator is built when a file of its format is first read or written, not when kops
    # starts: every command imported every format's (a tenth of a command's start), most read one or none
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True, strict=False,
                              validate_default=False, serialize_by_alias=True, defer_build=True)

    # How it binds to the domain value it holds (kops/formats/binding.py); every key below is a field's name.
    domain: ClassVar[type | None] = None  # the class it holds; None for a section of its parent's attributes
    names: ClassVar[dict[str, str]] = {}  # field -> the domain attribute, where the names differ
    derived: ClassVar[dict[str, Callable[[Any], Any]]] = {}  # field -> computed from the value; never read back
    ordered: ClassVar[dict[str, str | None]] = {}  # list field -> kept sorted both ways, by that attribute or whole
    rows: ClassVar[dict[str, tuple[str, ...]]] = {}  # field of JSON arrays -> each array's attributes, in order
    flat: ClassVar[dict[str, str]] = {}  # attribute whose attributes are fields here -> the field null when it is None
    map_key: ClassVar[str | None] = None  # the attribute that is the key of the JSON map holding this object

    @classmethod
    def written(cls, value: Any, doc: dict[str, Any]) -> None:
        """Adjust the document written for `value` where the format says more than its fields do."""


M = TypeVar("M", bound=BaseModel)


def fail(message: str, key: str | None = None, **context: Any) -> PydanticCustomError:
    """A check beyond shapes, reported like the others (`raise fail(...)` inside a validator); `key` is the
    field of the validated object the message is about."""
    return PydanticCustomError("kops", message, {**context, "key": key} if key else context)


def validate(model: type[M], doc: Any, fmt: str | None = None) -> M:
    """`doc` (parsed JSON) as `model`; the format version is checked first so a newer file says to upgrade."""
    if fmt is not None:
        if not isinstance(doc, dict):
            raise ShapeError(f"the document must be a JSON object, got {_describe(doc)}")
        check_format(doc.get("format"), fmt)
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        raise ShapeError(describe_error(first_error(exc.errors(include_url=False), doc))) from None


def first_error(errors: list[ErrorDetails], doc: Any) -> ErrorDetails:
    """The first error, located in the document's own terms (`in_document`). Where a value failed every branch of
    a union, each branch's error is listed at the same place: the one that got furthest into the value says most
    (`DISK.a` in a map of log dirs, rather than `DISK` not being a number)."""
    located: list[ErrorDetails] = []
    for error in errors:
        moved = error.copy()
        moved["loc"] = in_document(error["loc"], doc, last=error["type"] == "missing")
        located.append(moved)
    at = located[0]["loc"]
    same = [e for e in located if e["loc"][:len(at)] == at]
    return max(same, key=lambda e: len(e["loc"]))  # the first of the deepest


def in_document(loc: tuple[int | str, ...], doc: Any, last: bool = False) -> tuple[int | str, ...]:
    """pydantic's location as the document's path: the parts that index `doc`. pydantic also names the branch of a
    union or the validator it was in (`function-before[_figure(), float]`, `dict[str,int]`, `str`); those index
    nothing and are left out. `last`: the final part names a field the document lacks (a missing one): kept."""
    path: list[int | str] = []
    node = doc
    for i, part in enumerate(loc):
        found, child = _index(node, part)
        if found:
            node = child
        elif not (part == "[key]" or (last and i == len(loc) - 1)):
            continue
        path.append(part)
    return tuple(path)


def _index(node: Any, part: int | str) -> tuple[bool, Any]:
    """Whether `part` is a key of the JSON object or an index of the JSON array `node`, and what it holds."""
    if isinstance(node, dict) and isinstance(part, str) and part in node:
        return True, node[part]
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return True, node[part]
    return False, None


def location(loc: tuple[int | str, ...]) -> str:
    """('batches', 0, 'moves') -> 'batches[0].moves'."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part != "[key]":
            text += f".{part}" if text else str(part)
    return text or "the document"


def _describe(value: Any) -> str:
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        text = str(value)
    return text if len(text) <= 40 else text[:37] + "..."


_KINDS = {
    "int_type": "a JSON integer", "string_type": "a JSON string", "bool_type": "true or false",
    "float_type": "a JSON number", "dict_type": "a JSON object", "model_type": "a JSON object",
    "list_type": "a JSON array", "tuple_type": "a JSON array", "finite_number": "a finite number",
    "int_from_float": "a JSON integer", "int_parsing": "a JSON integer", "float_parsing": "a JSON number",
    "bool_parsing": "true or false", "model_attributes_type": "a JSON object",
}


def describe_error(error: ErrorDetails) -> str:
    """One pydantic error in kops's words, led by the JSON location."""
    loc, kind, value = error["loc"], error["type"], error.get("input")
    at = location(loc)
    ctx = error.get("ctx") or {}
    if loc and loc[-1] == "[key]":
        return f"{location(loc[:-2])} has key {loc[-2]!r}, which is not a number from 0"
    if kind in _KINDS:
        return f"{at} must be {_KINDS[kind]}, got {_describe(value)}"
    if kind == "missing":
        return f"{at} is missing"
    if kind == "extra_forbidden":
        return f"{at} is not a field of this format (a typo, or a file from a newer kops)"
    if kind == "greater_than" and ctx.get("gt") == 0:
        return f"{at} must be a positive number, got {_describe(value)}"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        return f"{at} is out of range: {_describe(value)}"
    if kind == "too_short" and not value:
        return f"{at} is empty"
    if kind == "literal_error":
        return f"{at} must be {ctx.get('expected')}, got {_describe(value)}"
    if kind == "kops":
        if ctx.get("key"):
            at = location((*loc, ctx["key"]))
        return f"{at} {error['msg']}" if at != "the document" else error["msg"]
    return f"{at}: {error['msg']}"
