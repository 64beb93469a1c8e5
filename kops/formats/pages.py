"""The reference part of each format's page in docs/, generated from its declaration's JSON Schema.

A page keeps its hand-written introduction; everything between the two markers is generated, one table per
JSON object (key, type with its ranges, required or not, meaning). `python -m kops.formats.pages --write`
regenerates the pages; tests/unit/test_docs.py fails when a page and its declaration drift apart.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from kops.formats.cruise_control import CapacityFileDoc
from kops.formats.plan import PlanDoc
from kops.formats.record import RecordDoc
from kops.formats.sizes import SizesRowDoc
from kops.formats.snapshot import SnapshotDoc

BEGIN = "<!-- reference generated from {source} by `python -m kops.formats.pages --write`: do not edit below -->"
END = "<!-- end of the generated reference -->"


@dataclass(frozen=True)
class Page:
    path: str  # from the repository's root
    model: type[BaseModel]
    source: str
    root: str  # how the page names the top-level object


PAGES = (
    Page("docs/plan-format.md", PlanDoc, "kops/formats/plan.py", "the plan"),
    Page("docs/snapshot-format.md", SnapshotDoc, "kops/formats/snapshot.py", "the snapshot"),
    Page("docs/record-format.md", RecordDoc, "kops/formats/record.py", "the record"),
    Page("docs/sizes-format.md", SizesRowDoc, "kops/formats/sizes.py", "a row"),
    Page("docs/cruise-control-capacity.md", CapacityFileDoc, "kops/formats/cruise_control.py", "the file"),
)


class _Schema:
    """One model's JSON Schema, walked from the root so that each object gets the path a reader knows it by."""

    def __init__(self, model: type[BaseModel]) -> None:
        self.root = model.model_json_schema(by_alias=True, mode="serialization")
        self.defs: dict[str, Any] = self.root.get("$defs", {})
        self.paths: dict[str, str] = {}

    def node(self, schema: dict[str, Any]) -> dict[str, Any]:
        ref = schema.get("$ref")
        return self.defs[ref.rsplit("/", 1)[1]] if ref else schema

    def type_of(self, schema: dict[str, Any], path: str) -> str:
        """How a value's type reads in a table; nested objects are named by the path of their own table."""
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[1]
            self.paths.setdefault(name, path)
            return f"object (`{self.paths[name]}`)"
        options = schema.get("anyOf")
        if options:
            return " or ".join(self.type_of(o, path) for o in options)
        if "const" in schema or "enum" in schema:
            return " \\| ".join(f"`{v}`" for v in schema.get("enum", [schema.get("const")]))
        kind = schema.get("type")
        if kind == "array":
            return self._array(schema, path)
        if kind == "object":
            return self._object(schema, path)
        return {"integer": "integer", "number": "number", "string": "string", "boolean": "true/false",
                "null": "null"}.get(kind or "", "any") + _ranges(schema)

    def _array(self, schema: dict[str, Any], path: str) -> str:
        if "prefixItems" in schema:
            return "[" + ", ".join(self.type_of(s, f"{path}[{i}]") for i, s in enumerate(schema["prefixItems"])) + "]"
        least = " non-empty" if schema.get("minItems") == 1 else ""
        unique = ", no value twice" if schema.get("uniqueItems") else ""
        return f"{least} array of {self.type_of(schema.get('items', {}), path + '[]')}{unique}".strip()

    def _object(self, schema: dict[str, Any], path: str) -> str:
        keyed = schema.get("patternProperties")
        if keyed:
            (pattern, values), = keyed.items()
            key = "number" if "[0-9]" in pattern else "key"
            return f"object ({key} -> {self.type_of(values, f'{path}.N')})"  # bracketed: an `or` after it reads apart
        values = schema.get("additionalProperties")
        if isinstance(values, dict):
            return f"object (name -> {self.type_of(values, f'{path}.NAME')})"
        return "object"

    def tables(self, root: str) -> list[str]:
        """One table per object, in the order a reader meets them."""
        lines: list[str] = []
        queue: list[tuple[str, dict[str, Any]]] = [(root, self.root)]
        done: set[str] = set()
        while queue:
            path, schema = queue.pop(0)
            lines += self._table(path, schema)
            for name, where in list(self.paths.items()):
                if name not in done:
                    done.add(name)
                    queue.append((where, self.defs[name]))
        return lines

    def _table(self, path: str, schema: dict[str, Any]) -> list[str]:
        top = schema is self.root
        lines = [f"### {path}" if top else f"### `{path}`", ""]
        if schema.get("description"):
            lines += [" ".join(schema["description"].split()), ""]
        lines += ["| key | type | required | meaning |", "| --- | --- | --- | --- |"]
        required = set(schema.get("required", []))
        for key, prop in schema.get("properties", {}).items():
            where = key if top else f"{path}.{key}"
            meaning = " ".join(prop.get("description", "").split())
            kind = self.type_of({k: v for k, v in prop.items() if k not in ("description", "default", "title")},
                                where)
            lines.append(f"| `{key}` | {kind} | {'yes' if key in required else 'no'} | {meaning} |")
        return [*lines, ""]


def _ranges(schema: dict[str, Any]) -> str:
    words = []
    for key, sign in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<")):
        if key in schema and abs(schema[key]) < 2**31 - 1:
            words.append(f"{sign} {schema[key]}")
    if "pattern" in schema:
        words.append(f"matching `{schema['pattern']}`")
    if "minLength" in schema:
        words.append("non-empty")
    return f" {', '.join(words)}" if words else ""


def reference(page: Page) -> str:
    """The generated part of a page, markers included."""
    body = _Schema(page.model).tables(page.root)
    return "\n".join([BEGIN.format(source=page.source), "", *body, END]) + "\n"


def render(page: Page, current: str) -> str:
    """`current` with its generated part replaced (or appended, the first time)."""
    begin = BEGIN.format(source=page.source)
    head = current.split(begin, 1)[0].rstrip("\n") if begin in current else current.rstrip("\n")
    return f"{head}\n\n{reference(page)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="rewrite the pages (default: list the stale ones)")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the repository's root")
    args = parser.parse_args(argv)
    stale = []
    for page in PAGES:
        file = args.root / page.path
        current = file.read_text(encoding="utf-8") if file.exists() else f"# {page.root}\n"
        wanted = render(page, current)
        if wanted != current:
            stale.append(page.path)
            if args.write:
                file.write_text(wanted, encoding="utf-8")
    if stale and not args.write:
        raise SystemExit(f"stale (run with --write): "
                         f"{', '.join(stale)}")  # the interpreter reports it: only kops/cli prints
    return 0


if __name__ == "__main__":
    sys.exit(main())
