"""Domain values to documents and back, derived from the declarations: no format has converters written by hand.

A declaration (`Doc`) names the domain value it holds (`domain = Move`); its fields are that value's attributes
of the same name, or of the name in `names` (`{"from_": "from_replicas"}`). Writing reads every field from the
value (properties too: a move's `kind`, a batch's `bytes`), leaves out what the field's `exclude_if` excludes
and writes a single-valued `Literal` (the format) as its value; reading passes the fields the domain class has
to it, converted by its type hints (lists to tuples, map keys to integers, nested declarations to their
values, maps in key order; a null where the attribute cannot be None reads as its default) and leaves derived
fields behind. A declaration with `domain = None` is a section: a JSON object that groups some of its parent's
attributes (a plan's `changes`); `domain = dict` keeps the object as a plain dict.

Where a format's JSON is not its value's shape, the declaration says how, in a few class variables
(kops/formats/base.py): `derived` fields are computed from the value (a snapshot's `summary`), `ordered` lists
are sorted both ways, `rows` hold each value as a JSON array of its attributes (the record's moves), `flat`
attributes write their own attributes as fields of the object (a partition's leader and ISR, null together when
it has no state), and `map_key` is the attribute a JSON map's key gives (a topic's name). Any other rule (a
rounding, a count of the parent's) is the declaration's `written` hook.

The conversions are compiled once per declaration into lists of small functions, so a million partitions cost
what hand-written converters did.
"""

from __future__ import annotations

import dataclasses
import operator
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, TypeGuard

from kops.formats.base import Doc

Convert = Callable[[Any], Any]


def _same(value: Any) -> Any:
    return value


_readers: dict[type[Doc], Callable[..., Any]] = {}
_writers: dict[type[Doc], Callable[[Any], dict[str, Any]]] = {}


def value_of(doc: Doc, key: str | None = None) -> Any:
    """The domain value a validated document holds (`key`: its key in the JSON map holding it, if any)."""
    reader = _readers.get(type(doc)) or _compile_reader(type(doc))
    return reader(doc, key)


def document_of(value: Any, model: type[Doc]) -> dict[str, Any]:
    """The JSON document of `value`, as `model` declares it (not validated: the caller validates)."""
    writer = _writers.get(model) or _compile_writer(model)
    return writer(value)


# -- reading --------------------------------------------------------------------------------------------------

def _hint_reader(hint: Any) -> Convert:
    """How a validated field's value becomes the domain attribute of type `hint`."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        inner = _hint_reader(next(a for a in args if a is not type(None)))
        return _same if inner is _same else (lambda v: None if v is None else inner(v))
    if origin in (tuple, list):
        item = _hint_reader(args[0])
        container: Convert = origin
        return container if item is _same else (lambda v: container(map(item, v)))
    if origin is dict:
        value = _hint_reader(args[1])
        if args[0] is int:
            return lambda v: {int(k): value(x) for k, x in sorted(v.items(), key=lambda kv: int(kv[0]))}
        if value is value_of:  # a map of declared objects: each may take its key (a topic's name)
            return lambda v: {k: value_of(x, k) for k, x in sorted(v.items())}
        return lambda v: value_of(v) if isinstance(v, Doc) else {k: value(x) for k, x in sorted(v.items())}
    if isinstance(hint, type) and (dataclasses.is_dataclass(hint) or issubclass(hint, tuple)):
        return value_of
    return _same


def _row_reader(hint: Any, attrs: tuple[str, ...]) -> Convert:
    """JSON arrays to the values of `hint`'s item class, each array holding `attrs` in order."""
    container, cls = typing.get_origin(hint), typing.get_args(hint)[0]
    hints = typing.get_type_hints(cls)
    converts = [(attr, _hint_reader(hints[attr])) for attr in attrs]

    def read(rows: list[Any]) -> Any:
        return container(cls(**{attr: convert(x) for (attr, convert), x in zip(converts, row)}) for row in rows)
    return read


def _sorted_reader(convert: Convert, hint: Any, by: str | None) -> Convert:
    container, key = typing.get_origin(hint), None if by is None else operator.attrgetter(by)
    return lambda v: container(sorted(convert(v), key=key))


def _optional(annotation: Any) -> bool:
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    return union and type(None) in typing.get_args(annotation)


def _zero(owner: type, attr: str, hint: Any) -> Callable[[], Any]:
    """What a null reads as where the attribute cannot be None: its default, else its type's empty value."""
    found = [f for f in dataclasses.fields(owner) if f.name == attr] if dataclasses.is_dataclass(owner) else []
    if found and found[0].default is not dataclasses.MISSING:
        default = found[0].default
        return lambda: default
    if found and found[0].default_factory is not dataclasses.MISSING:
        return found[0].default_factory
    empty: Callable[[], Any] = typing.get_origin(hint) or hint  # int() is 0, tuple() is ()
    return empty


def _domain_fields(domain: type) -> list[str]:
    if dataclasses.is_dataclass(domain):
        return [f.name for f in dataclasses.fields(domain) if f.init]
    return list(domain._fields)  # type: ignore[attr-defined]  # a NamedTuple


def _class_of(hint: Any) -> type:
    """`PartitionState` for `PartitionState | None`."""
    args = typing.get_args(hint)
    found: type = next(a for a in args if a is not type(None)) if args else hint
    return found


def _is_section(annotation: Any) -> TypeGuard[type[Doc]]:
    return isinstance(annotation, type) and issubclass(annotation, Doc) and annotation.domain is None


_kwargs: dict[type[Doc], Callable[..., dict[str, Any]]] = {}
_owners: dict[type[Doc], type] = {}  # a section -> the domain class whose attributes it groups


def _compiled(name: str, lines: list[str], namespace: dict[str, Any]) -> Callable[..., Any]:
    """A function from its source lines, as `dataclasses` makes `__init__`: as fast as one written by hand."""
    exec("\n".join(lines), namespace)  # noqa: S102 - the source is built from the declarations' own names
    function: Callable[..., Any] = namespace[name]
    return function


def _compile_reader(model: type[Doc]) -> Callable[..., Any]:
    """`Move(topic=doc.topic, from_replicas=tuple(doc.from_), ...)`, or a section's keyword arguments."""
    domain = model.domain
    if domain is dict:
        _readers[model] = lambda doc, key=None: doc.model_dump(mode="json")
        return _readers[model]
    owner = domain or _owners[model]
    namespace: dict[str, Any] = {"_domain": domain, "_kwargs": _section_kwargs}
    args = _reader_args(model, owner, namespace)
    if model.map_key:
        args.append(f"{model.map_key}=key")
    call = "dict" if domain is None else "_domain"
    reader = _compiled("read", ["def read(doc, key=None):", f"    return {call}({', '.join(args)})"], namespace)
    if domain is None:
        _kwargs[model] = reader
    _readers[model] = reader
    return reader


def _reader_args(model: type[Doc], owner: type, namespace: dict[str, Any]) -> list[str]:
    """The keyword arguments of the domain class's call, one source snippet each."""
    hints, wanted = typing.get_type_hints(owner), set(_domain_fields(owner))
    nested = {attr: _class_of(hints[attr]) for attr in model.flat}  # a partition's state: a PartitionState
    inner: dict[str, list[str]] = {attr: [] for attr in nested}
    args = []
    for i, (name, info) in enumerate(model.model_fields.items()):
        attr = model.names.get(name, name)
        if name in model.derived:
            continue
        if _is_section(info.annotation):
            _owners[info.annotation] = owner
            namespace[f"_s{i}"] = info.annotation
            args.append(f"**_kwargs(_s{i})(doc.{name})")
        elif attr in wanted:
            args.append(f"{attr}={_read_expr(model, name, info.annotation, owner, attr, namespace, i)}")
        else:
            home = next((n for n, cls in nested.items() if attr in _domain_fields(cls)), None)
            if home is not None:
                expr = _read_expr(model, name, info.annotation, nested[home], attr, namespace, i)
                inner[home].append(f"{attr}={expr}")
    for attr, cls in nested.items():
        namespace[f"_n_{attr}"] = cls
        args.append(f"{attr}=(None if doc.{model.flat[attr]} is None else _n_{attr}({', '.join(inner[attr])}))")
    return args


def _read_expr(model: type[Doc], name: str, annotation: Any, owner: type, attr: str, namespace: dict[str, Any],
               i: int) -> str:
    """`tuple(doc.isr)`, `(_z3() if doc.controller_epoch is None else doc.controller_epoch)`, ..."""
    hint = typing.get_type_hints(owner)[attr]
    convert = _row_reader(hint, model.rows[name]) if name in model.rows else _hint_reader(hint)
    if name in model.ordered:
        convert = _sorted_reader(convert, hint, model.ordered[name])
    namespace[f"_c{i}"] = convert
    value = f"doc.{name}" if convert is _same else f"_c{i}(doc.{name})"
    if _optional(annotation) and not _optional(hint):
        namespace[f"_z{i}"] = _zero(owner, attr, hint)
        return f"(_z{i}() if doc.{name} is None else {value})"
    return value


def _section_kwargs(section: type[Doc]) -> Callable[..., dict[str, Any]]:
    if section not in _kwargs:
        _compile_reader(section)
    return _kwargs[section]


# -- writing --------------------------------------------------------------------------------------------------

def _annotation_writer(annotation: Any) -> Convert:
    """How a domain attribute becomes the JSON value the field's annotation declares."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        inner = _annotation_writer(next(a for a in args if a is not type(None)))
        return _same if inner is _same else (lambda v: None if v is None else inner(v))
    if origin is tuple:
        return list
    if origin is list:
        item = _annotation_writer(args[0])
        return list if item is _same else (lambda v: [item(x) for x in v])
    if origin is dict:
        value = _annotation_writer(args[1])
        return lambda v: {str(k): value(x) for k, x in sorted(v.items())}
    if isinstance(annotation, type) and issubclass(annotation, Doc):
        if annotation.domain is dict:
            return _same
        return lambda v: document_of(v, annotation)
    if typing.get_origin(annotation) is typing.Annotated:
        return _annotation_writer(args[0])
    return _same


def _row_writer(annotation: Any, attrs: tuple[str, ...]) -> Convert:
    """Values to JSON arrays of their `attrs`, each converted as the array's item type declares."""
    positions = typing.get_args(typing.get_args(annotation)[0])
    converts = [(attr, _annotation_writer(at)) for attr, at in zip(attrs, positions, strict=True)]
    return lambda v: [[convert(getattr(x, attr)) for attr, convert in converts] for x in v]


def _field_writer(model: type[Doc], name: str, annotation: Any) -> Convert:
    convert = _row_writer(annotation, model.rows[name]) if name in model.rows else _annotation_writer(annotation)
    if name not in model.ordered:
        return convert
    by = model.ordered[name]
    key = None if by is None else operator.attrgetter(by)
    return lambda v: convert(sorted(v, key=key))


def _has(owner: type, attr: str) -> bool:
    return attr in _domain_fields(owner) or hasattr(owner, attr)


def _raw(model: type[Doc], name: str, attr: str, owner: type, namespace: dict[str, Any], i: int) -> str:
    """Where a field's domain value is: `v.topic`, `_d3(v)` (derived), `_n_state.leader` (flat), ..."""
    annotation = model.model_fields[name].annotation
    if name in model.derived:
        namespace[f"_d{i}"] = model.derived[name]
        return f"_d{i}(v)"
    if _is_section(annotation):
        _owners[annotation] = owner
        return "v"
    if attr not in _domain_fields(owner):
        hints = typing.get_type_hints(owner)
        home = next((n for n in model.flat if attr in _domain_fields(_class_of(hints[n]))), None)
        if home is not None:
            return f"(None if _n_{home} is None else _n_{home}.{attr})"
    return f"v.{attr}" if _has(owner, attr) else "None"


def _compile_writer(model: type[Doc]) -> Callable[[Any], dict[str, Any]]:
    """`{"topic": v.topic, "from": list(v.from_replicas), ...}`, then the fields a value may leave out."""
    owner = model.domain or _owners[model]
    namespace: dict[str, Any] = {"_hook": model.written}
    always, optional = [], []
    for i, (name, info) in enumerate(model.model_fields.items()):
        key, annotation = info.alias or name, info.annotation
        if typing.get_origin(annotation) is Literal and len(typing.get_args(annotation)) == 1:
            namespace[f"_k{i}"] = typing.get_args(annotation)[0]
            always.append(f"{key!r}: _k{i}")
            continue
        raw = _raw(model, name, model.names.get(name, name), owner, namespace, i)
        namespace[f"_c{i}"] = _field_writer(model, name, annotation)
        value = raw if namespace[f"_c{i}"] is _same else f"_c{i}({raw})"
        excluded = getattr(info, "exclude_if", None)
        if excluded is None:
            always.append(f"{key!r}: {value}")
        else:
            namespace[f"_x{i}"] = excluded
            optional += [f"    if not _x{i}({raw}):", f"        doc[{key!r}] = {value}"]
    hook = ["    _hook(v, doc)"] if any("written" in vars(c) for c in model.__mro__[:model.__mro__.index(Doc)]) else []
    flat = [f"    _n_{attr} = v.{attr}" for attr in model.flat]
    lines = ["def write(v):", *flat, f"    doc = {{{', '.join(always)}}}", *optional, *hook, "    return doc"]
    writer = _compiled("write", lines, namespace)
    _writers[model] = writer
    return writer
