"""Domain values to documents and back, derived from the declarations: no format has converters written by hand.

A declaration (`Doc`) names the domain value it holds (`domain = Move`); its fields are that value's attributes
of the same name, or of the name in `names` (`{"from_": "from_replicas"}`). Writing reads every field from the
value (properties too: a move's `kind`, a batch's `bytes`), leaves out what the field's `exclude_if` excludes
and writes a single-valued `Literal` (the format) as its value; reading passes the fields the domain class has
to it, converted by its type hints (lists to tuples, map keys to integers, nested declarations to their
values) and leaves derived fields behind. A declaration with `domain = None` is a section: a JSON object that
groups some of its parent's attributes (a plan's `changes`); `domain = dict` keeps the object as a plain dict.
A format's rule beyond this (a rounding, a count of the parent's) is the declaration's `written` hook.

The conversions are compiled once per declaration into lists of small functions, so a million partitions cost
what hand-written converters did.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, TypeGuard

from kops.formats.base import Doc

Convert = Callable[[Any], Any]


def _same(value: Any) -> Any:
    return value


_readers: dict[type[Doc], Callable[[Doc], Any]] = {}
_writers: dict[type[Doc], Callable[[Any], dict[str, Any]]] = {}


def value_of(doc: Doc) -> Any:
    """The domain value a validated document holds."""
    reader = _readers.get(type(doc)) or _compile_reader(type(doc))
    return reader(doc)


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
        return lambda v: value_of(v) if isinstance(v, Doc) else {k: value(x) for k, x in v.items()}
    if isinstance(hint, type) and (dataclasses.is_dataclass(hint) or issubclass(hint, tuple)):
        return value_of
    return _same


def _domain_fields(domain: type) -> list[str]:
    if dataclasses.is_dataclass(domain):
        return [f.name for f in dataclasses.fields(domain) if f.init]
    return list(domain._fields)  # type: ignore[attr-defined]  # a NamedTuple


def _is_section(annotation: Any) -> TypeGuard[type[Doc]]:
    return isinstance(annotation, type) and issubclass(annotation, Doc) and annotation.domain is None


_kwargs: dict[type[Doc], Callable[[Doc], dict[str, Any]]] = {}
_owners: dict[type[Doc], type] = {}  # a section -> the domain class whose attributes it groups


def _compiled(name: str, lines: list[str], namespace: dict[str, Any]) -> Callable[[Any], Any]:
    """A function from its source lines, as `dataclasses` makes `__init__`: as fast as one written by hand."""
    exec("\n".join(lines), namespace)  # noqa: S102 - the source is built from the declarations' own names
    function: Callable[[Any], Any] = namespace[name]
    return function


def _compile_reader(model: type[Doc]) -> Callable[[Doc], Any]:
    """`Move(topic=doc.topic, from_replicas=tuple(doc.from_), ...)`, or a section's keyword arguments."""
    domain = model.domain
    if domain is dict:
        _readers[model] = lambda doc: doc.model_dump(mode="json")
        return _readers[model]
    owner = domain or _owners[model]
    hints = typing.get_type_hints(owner)
    wanted = set(_domain_fields(owner))
    namespace: dict[str, Any] = {"_domain": domain, "_kwargs": _section_kwargs}
    args = []
    for i, (name, info) in enumerate(model.model_fields.items()):
        attr = model.names.get(name, name)
        if _is_section(info.annotation):
            _owners[info.annotation] = owner
            namespace[f"_s{i}"] = info.annotation
            args.append(f"**_kwargs(_s{i})(doc.{name})")
        elif attr in wanted:
            convert = _hint_reader(hints[attr])
            namespace[f"_c{i}"] = convert
            args.append(f"{attr}=doc.{name}" if convert is _same else f"{attr}=_c{i}(doc.{name})")
    call = "dict" if domain is None else "_domain"
    reader = _compiled("read", ["def read(doc):", f"    return {call}({', '.join(args)})"], namespace)
    if domain is None:
        _kwargs[model] = reader
    _readers[model] = reader
    return reader


def _section_kwargs(section: type[Doc]) -> Callable[[Doc], dict[str, Any]]:
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


def _has(owner: type, attr: str) -> bool:
    return attr in _domain_fields(owner) or hasattr(owner, attr)


def _compile_writer(model: type[Doc]) -> Callable[[Any], dict[str, Any]]:
    """`{"topic": v.topic, "from": list(v.from_replicas), ...}`, then the fields a value may leave out."""
    owner = model.domain or _owners[model]
    namespace: dict[str, Any] = {"_hook": model.written}
    always, optional = [], []
    for i, (name, info) in enumerate(model.model_fields.items()):
        key, annotation = info.alias or name, info.annotation
        attr = model.names.get(name, name)
        if typing.get_origin(annotation) is Literal and len(typing.get_args(annotation)) == 1:
            namespace[f"_k{i}"] = typing.get_args(annotation)[0]
            always.append(f"{key!r}: _k{i}")
            continue
        if _is_section(annotation):
            _owners[annotation] = owner
        namespace[f"_c{i}"] = _annotation_writer(annotation)
        raw = "v" if _is_section(annotation) else f"v.{attr}" if _has(owner, attr) else "None"
        value = raw if namespace[f"_c{i}"] is _same else f"_c{i}({raw})"
        excluded = getattr(info, "exclude_if", None)
        if excluded is None:
            always.append(f"{key!r}: {value}")
        else:
            namespace[f"_x{i}"] = excluded
            optional += [f"    if not _x{i}({raw}):", f"        doc[{key!r}] = {value}"]
    hook = ["    _hook(v, doc)"] if any("written" in vars(c) for c in model.__mro__[:model.__mro__.index(Doc)]) else []
    lines = ["def write(v):", f"    doc = {{{', '.join(always)}}}", *optional, *hook, "    return doc"]
    writer = _compiled("write", lines, namespace)
    _writers[model] = writer
    return writer
