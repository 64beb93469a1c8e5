"""The maps stay true: every module, test and benchmark a docstring of kops/, README.md or a page of docs/ names
exists, and every package of kops/ is on README.md's layout. A rename that leaves a map behind fails here, not in a
newcomer's first hour."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# `kops/x/y.py`, `kops/x/`, `kops/x`; not a znode (`/kops/lock`), a dot folder (`.kops/lab`) or a cache path
PATH = re.compile(r"(?<![\w/.~-])kops/[\w/.-]*[\w/]")
# `tests/unit/test_x.py`, `bench/x.py`: a test module or a benchmark a page names as where something is checked
SUPPORT = re.compile(r"(?<![\w/.~-])(?:tests|bench)/[\w/]*\w\.py")
# `kops.x.y` (a module, then perhaps one of its names); not `kops-review.yml` nor a file such as `kops.yml`
DOTTED = re.compile(r"(?<![\w./-])kops(?:\.[A-Za-z_]\w*)+(?!\w|/)")
FILE_SUFFIXES = {"md", "yml", "yaml", "json", "toml", "txt", "cfg", "properties"}
# a package docstring's `name`: one of its own modules (`plan(...)`, `Types` and `isr_change_` are not)
BARE = re.compile(r"`([a-z][a-z0-9_]*[a-z0-9])`(?!\()")


def _package_docstrings() -> Iterator[tuple[str, str]]:
    for init in sorted(ROOT.glob("kops/**/__init__.py")):
        yield str(init.relative_to(ROOT)), ast.get_docstring(ast.parse(init.read_text())) or ""


def _layout() -> str:
    """README.md's layout section: from its `## Layout` heading to the next heading of that level ("" if none)."""
    found = re.search(r"^## Layout\s*\n(.*?)(?=^## |\Z)", (ROOT / "README.md").read_text(), re.M | re.S)
    return found.group(1) if found else ""


def _module_docstrings() -> Iterator[tuple[str, str]]:
    for module in sorted(ROOT.glob("kops/**/*.py")):
        if module.name != "__init__.py":
            yield str(module.relative_to(ROOT)), ast.get_docstring(ast.parse(module.read_text())) or ""


def _maps() -> Iterator[tuple[str, str]]:
    yield from _package_docstrings()
    yield from _module_docstrings()
    yield "README.md", (ROOT / "README.md").read_text()
    for page in sorted(ROOT.glob("docs/**/*.md")):
        yield str(page.relative_to(ROOT)), page.read_text()


def _path_exists(named: str) -> bool:
    target = ROOT / named
    return target.exists() or (not named.endswith(("/", ".py")) and target.with_suffix(".py").exists())


def _defines(module: Path, name: str) -> bool:
    """Whether a module (a .py file or a package's __init__.py) binds `name` at its top level."""
    tree = ast.parse(module.read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == name:
            return True
        if isinstance(node, ast.Import | ast.ImportFrom) and name in {a.asname or a.name for a in node.names}:
            return True
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
    return False


def _dotted_exists(named: str) -> bool:
    """`kops.a.b` is a module or package, or a module followed by one name it defines (`kops.units.format_rate`)."""
    parts = named.split(".")
    for end in range(len(parts), 1, -1):
        base = ROOT.joinpath(*parts[:end])
        module = base / "__init__.py" if (base / "__init__.py").exists() else base.with_suffix(".py")
        if module.exists():
            rest = parts[end:]
            return not rest or (len(rest) == 1 and _defines(module, rest[0]))
    return False


def _stale(source: str, text: str) -> list[str]:
    stale = [f"{source}: {m}" for m in PATH.findall(text) if not _path_exists(m)]
    stale += [f"{source}: {m}" for m in SUPPORT.findall(text) if not (ROOT / m).exists()]
    stale += [f"{source}: {m}" for m in DOTTED.findall(text)
              if m.rsplit(".", 1)[-1] not in FILE_SUFFIXES and not _dotted_exists(m)]
    return stale


MAPS = list(_maps())


@pytest.mark.parametrize(("source", "text"), MAPS, ids=[source for source, _ in MAPS])
def test_every_module_a_map_names_exists(source: str, text: str) -> None:
    assert _stale(source, text) == []


def test_every_module_a_package_docstring_lists_exists() -> None:
    """A package docstring's own `name`s (`record`, `steps`, ...) are modules or packages beside it."""
    stale = []
    for source, text in _package_docstrings():
        folder = (ROOT / source).parent
        stale += [f"{source}: `{name}`" for name in BARE.findall(text) if name != "kops"
                  and not (folder / f"{name}.py").exists() and not (folder / name / "__init__.py").exists()]
    assert stale == []


def test_every_package_is_on_the_readme_layout() -> None:
    packages = {f"{init.parent.relative_to(ROOT)}/" for init in ROOT.glob("kops/*/**/__init__.py")}
    layout = _layout()
    assert layout, "README.md has no `## Layout` section"
    listed = set(PATH.findall(layout))
    assert sorted(packages - listed) == []


def test_the_checks_see_stale_names() -> None:
    """The patterns catch each form, and leave znodes, dot folders and other files alone."""
    text = ("`kops/gone.py`, kops/gone/, kops.gone.module, kops/planner/, kops.planner.rolling, kops.units.format_rate,"
            " /kops/lock, .kops/lab, ~/.cache/kops/kafka, kops.yml, kops.units.no_such_name, tests/unit/test_maps.py,"
            " tests/unit/test_gone.py, bench/capacity.py, bench/gone.py, /tmp/tests/x.py")
    assert _stale("x", text) == ["x: kops/gone.py", "x: kops/gone/", "x: tests/unit/test_gone.py", "x: bench/gone.py",
                                 "x: kops.gone.module", "x: kops.units.no_such_name"]
