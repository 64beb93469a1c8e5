"""The documents stay true: every page and section the code cites exists, every command and option is in
docs/ (docs/cli.md lists the commands; each command's page, or docs/cli.md for the shared connection options,
names its options)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer

from kops.cli.main import app
from kops.formats import pages

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [*ROOT.glob("kops/**/*.py"), *ROOT.glob("spark/**/*.py"), *ROOT.glob("bench/*.py"),
           *ROOT.glob("tests/**/*.py"), *ROOT.glob("docs/**/*.md"), ROOT / "README.md"]
CITED_DOC = re.compile(r"\bdocs/[\w./-]+\.md")
MD_LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")
SECTION = {"spec": "docs/design/kafka-zk-layout.md", "architecture.md": "docs/design/architecture.md"}
CITED_SECTION = re.compile(r"\b(spec|architecture\.md) §(\d+(?:\.\d+)?)(?:[–-](\d+(?:\.\d+)?))?")


def _texts() -> list[tuple[Path, str]]:
    return [(path, path.read_text()) for path in SOURCES if path.is_file()]


def test_every_cited_document_exists() -> None:
    missing = []
    for path, text in _texts():
        for cited in CITED_DOC.findall(text):
            if not (ROOT / cited).exists():
                missing.append(f"{path.relative_to(ROOT)}: {cited}")
        if path.suffix == ".md":
            for link in MD_LINK.findall(text):
                if "://" not in link and not (path.parent / link).resolve().exists():
                    missing.append(f"{path.relative_to(ROOT)}: link {link}")
    assert missing == []


def _headings(doc: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^#+ (\d+(?:\.\d+)?)[. ]", (ROOT / doc).read_text(), re.M)}


def test_every_cited_section_exists() -> None:
    missing = []
    for path, text in _texts():
        for doc, first, last in CITED_SECTION.findall(text):
            for number in filter(None, (first, last)):
                if number not in _headings(SECTION[doc]):
                    missing.append(f"{path.relative_to(ROOT)}: {doc} §{number}")
    assert missing == []


def _commands() -> dict[str, Any]:
    """Every leaf command by its full name ("lab broker kill", "sizes collect", "apply")."""
    root = typer.main.get_command(app)
    found: dict[str, Any] = {}

    def walk(command: Any, prefix: str) -> None:  # typer's own (vendored) click: duck-typed
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                walk(sub, f"{prefix} {name}".strip())
        else:
            found[prefix] = command

    walk(root, "")
    return found


def test_docs_cli_lists_every_command() -> None:
    table = (ROOT / "docs/cli.md").read_text()
    missing = [name for name in _commands() if name.split()[0] not in ("lab", "sizes")
               and f"`kops {name}" not in table]
    groups = {name.split()[0] for name in _commands() if name.split()[0] in ("lab", "sizes")}
    missing += [g for g in groups if f"`kops {g} " not in table]
    assert missing == []


@pytest.mark.parametrize("name", sorted(n for n in _commands() if n.split()[0] not in ("lab",)))
def test_each_command_page_names_its_options(name: str) -> None:
    """The command's own page in docs/, or docs/cli.md (the connection options), names every option."""
    page = ROOT / "docs" / f"{name.split()[0]}.md"
    assert page.exists(), f"docs/{page.name} is missing"
    text = page.read_text() + (ROOT / "docs/cli.md").read_text()
    options = [opt for param in _commands()[name].params if param.param_type_name == "option"
               for opt in param.opts if opt.startswith("--") and opt != "--help"]
    assert [o for o in options if o not in text] == []


def test_the_module_map_names_every_package() -> None:
    """docs/design/architecture.md's table lists every package of kops/ (and the lab's and the cluster port's
    adapters'), and nothing else."""
    text = (ROOT / "docs/design/architecture.md").read_text()
    listed = set(re.findall(r"^\| `(kops/[\w/]+/)` \|", text, re.M))
    folders = [*ROOT.glob("kops/*/"), *ROOT.glob("kops/lab/*/"), *ROOT.glob("kops/cluster/*/")]
    packages = {f"{p.relative_to(ROOT)}/" for p in folders if (p / "__init__.py").exists()}
    assert listed == packages


def test_the_defaults_docs_cli_md_gives_are_the_code_s() -> None:
    """docs/cli.md's option table says `| \\`--option ...\\` | default | ...`: every command with that option has it."""
    rows = re.findall(r"^\| `(--[\w-]+)[^`]*` \| ([^|]*) \|", (ROOT / "docs/cli.md").read_text(), re.M)
    documented = {option: default.strip() for option, default in rows if default.strip()}
    assert documented, "docs/cli.md lists no defaults"
    wrong = []
    for name, command in _commands().items():
        for param in command.params:
            for option in (o for o in param.opts if o in documented):
                default = param.default
                shown = f"{default:g}" if isinstance(default, float) else str(default)
                if shown != documented[option]:
                    wrong.append(f"kops {name} {option}: code {shown}, docs/cli.md {documented[option]}")
    assert wrong == []


@pytest.mark.parametrize("page", pages.PAGES, ids=lambda p: p.path)
def test_format_pages_are_generated_from_the_declarations(page: pages.Page) -> None:
    """Each file format's reference in docs/ is what its declaration says (`python -m kops.formats.pages --write`)."""
    current = (ROOT / page.path).read_text(encoding="utf-8")
    assert pages.BEGIN.format(source=page.source) in current
    assert pages.render(page, current) == current, f"{page.path} drifted from {page.source}; regenerate it"
