"""YAML with positions: every mapping key and value, every list item, knows its FILE:LINE:COL.

PyYAML composes a node tree that carries marks; this module turns it into plain dicts and lists (subclasses
that remember where their members came from), so validation can point at the exact line. Only YAML's safe
types are built. Whatever the bytes, loading either succeeds or raises `YamlError` with a location: random
input, invalid UTF-8, duplicate keys, recursive aliases and absurd nesting included.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kops.errors import KopsError
from kops.model.desired import SourceLocation

MAX_DEPTH = 200
# libyaml's parser when PyYAML was built with it (10x faster on large playbooks); same nodes and marks.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlError(KopsError):
    def __init__(self, location: SourceLocation, message: str, hint: str | None = None) -> None:
        super().__init__(message, where=str(location), hint=hint)
        self.location = location


class Located:
    """Mixin for containers that know their own location and their members'."""

    location: SourceLocation


class YamlMap(dict[str, Any], Located):
    def __init__(self, location: SourceLocation) -> None:
        super().__init__()
        self.location = location
        self.key_locations: dict[Any, SourceLocation] = {}
        self.value_locations: dict[Any, SourceLocation] = {}

    def where(self, key: Any) -> SourceLocation:
        """Location of the value under `key` (else of the key, else of the mapping)."""
        return self.value_locations.get(key) or self.key_locations.get(key) or self.location


class YamlList(list[Any], Located):
    def __init__(self, location: SourceLocation) -> None:
        super().__init__()
        self.location = location
        self.item_locations: list[SourceLocation] = []

    def where(self, index: int) -> SourceLocation:
        return self.item_locations[index] if 0 <= index < len(self.item_locations) else self.location


def location_of(value: Any, default: SourceLocation) -> SourceLocation:
    return value.location if isinstance(value, Located) else default


def _mark(file: str, mark: Any) -> SourceLocation:
    return SourceLocation(file, mark.line + 1, mark.column + 1) if mark is not None else SourceLocation(file, 1, 1)


class _Converter:
    def __init__(self, file: str, loader: Any) -> None:
        self.file = file
        self.loader = loader
        self.done: dict[int, Any] = {}
        self.active: set[int] = set()

    def convert(self, node: yaml.Node, depth: int = 0) -> Any:
        where = _mark(self.file, node.start_mark)
        if depth > MAX_DEPTH:
            raise YamlError(where, f"nesting deeper than {MAX_DEPTH} levels")
        key = id(node)
        if key in self.done:
            return self.done[key]
        if key in self.active:
            raise YamlError(where, "recursive YAML alias", hint="an anchor cannot contain itself")
        if isinstance(node, yaml.ScalarNode):
            value = self.loader.construct_object(node, deep=True)
            self.done[key] = value
            return value
        if node.tag not in ("tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"):
            raise YamlError(where, f"unsupported YAML tag {node.tag!r}", hint="declarations use plain YAML values only")
        self.active.add(key)
        try:
            if isinstance(node, yaml.SequenceNode):
                result: Any = YamlList(where)
                for item in node.value:
                    result.append(self.convert(item, depth + 1))
                    result.item_locations.append(_mark(self.file, item.start_mark))
            elif isinstance(node, yaml.MappingNode):
                self.loader.flatten_mapping(node)  # YAML merge keys (<<)
                result = YamlMap(where)
                for key_node, value_node in node.value:
                    k = self.convert(key_node, depth + 1)
                    k_where = _mark(self.file, key_node.start_mark)
                    if isinstance(k, (dict, list)):
                        raise YamlError(k_where, "a mapping key must be a plain value, not a mapping or list")
                    if k in result:
                        raise YamlError(
                            k_where,
                            f"duplicate key {k!r} (first at line {result.key_locations[k].line})",
                            hint="each key may appear once per mapping",
                        )
                    result[k] = self.convert(value_node, depth + 1)
                    result.key_locations[k] = k_where
                    result.value_locations[k] = _mark(self.file, value_node.start_mark)
            else:  # pragma: no cover - PyYAML has no other node kinds
                raise YamlError(where, f"unsupported YAML node {type(node).__name__}")
        finally:
            self.active.discard(key)
        self.done[key] = result
        return result


def parse_yaml(text: str | bytes, file: str) -> Any:
    """Parse one YAML document; an empty document is None."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise YamlError(SourceLocation(file, 1, 1), f"not UTF-8 text (byte {exc.start})") from None
    loader = None
    try:
        loader = _Loader(text)
        node = loader.get_single_node()
        if node is None:
            return None
        return _Converter(file, loader).convert(node)
    except yaml.reader.ReaderError as exc:
        raise YamlError(SourceLocation(file, 1, 1),
                        f"invalid YAML: {exc.reason} (character #x{exc.character:04x} at offset "
                        f"{exc.position})") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        raise YamlError(_mark(file, mark), f"invalid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise YamlError(SourceLocation(file, 1, 1), f"invalid YAML: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise YamlError(SourceLocation(file, 1, 1), "invalid YAML: nested too deeply") from None
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. an unparseable timestamp scalar
        raise YamlError(SourceLocation(file, 1, 1), f"invalid YAML value: {exc}") from None
    finally:
        if loader is not None:
            loader.dispose()


def load_yaml(path: Path, shown_as: str | None = None) -> Any:
    """Read and parse a YAML file; a missing or unreadable file is a clear error too."""
    name = shown_as or str(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise YamlError(SourceLocation(name, 1, 1), "no such file") from None
    except IsADirectoryError:
        raise YamlError(SourceLocation(name, 1, 1), "is a folder, expected a YAML file") from None
    except OSError as exc:
        raise YamlError(SourceLocation(name, 1, 1), f"cannot read: {exc.strerror}") from None
    return parse_yaml(data, name)
