"""bench/RESULTS.md stays a set of current tables, not a diary: issue 34 asks for one current table per benchmark, with
the commit, the command and the machine that gave it; superseded runs and how each figure came down live in git
(`git log -p bench/RESULTS.md`). A rerun replaces its rows instead of adding a "Rerun ..." paragraph."""

from __future__ import annotations

import re
from pathlib import Path

RESULTS = Path(__file__).parents[2] / "bench" / "RESULTS.md"
COMMIT = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")


def sections(text: str) -> dict[str, list[str]]:
    """Each `## ` section's lines (heading excluded), by heading."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = found.setdefault(line, [])
        elif current is not None:
            current.append(line)
    return found


def tables(lines: list[str]) -> list[tuple[int, list[str]]]:
    """Each markdown table of a section: the index of its header row and its rows."""
    found: list[tuple[int, list[str]]] = []
    for index, line in enumerate(lines):
        if line.startswith("|"):
            if index == 0 or not lines[index - 1].startswith("|"):
                found.append((index, []))
            found[-1][1].append(line)
    return found


def line_before(lines: list[str], index: int) -> str:
    """The last non-blank line before lines[index] ("" if none)."""
    return next((line for line in reversed(lines[:index]) if line.strip()), "")


def paragraphs(text: str) -> list[str]:
    return [block.strip() for block in re.split(r"\n\s*\n", text) if block.strip()]


def table_count_problems(text: str) -> list[str]:
    problems = []
    for heading, lines in sections(text).items():
        found = tables(lines)
        extra = [start for start, _ in found[1:] if not line_before(lines, start).startswith("Per goal")]
        if not found or extra:
            problems.append(f"{heading}: {len(found)} tables")
    return problems


def commit_problems(text: str) -> list[str]:
    problems = []
    for heading, lines in sections(text).items():
        prose = "\n".join(line for line in lines if not line.startswith("|"))
        for _, rows in tables(lines):
            header = [cell.strip().lower() for cell in rows[0].strip().strip("|").split("|")]
            if "commit" not in header and not COMMIT.search(prose):
                problems.append(f"{heading}: a table names no commit")
    return problems


def test_no_rerun_paragraphs() -> None:
    assert [p[:80] for p in paragraphs(RESULTS.read_text()) if p.startswith("Rerun")] == []


def test_one_table_per_benchmark() -> None:
    text = RESULTS.read_text()
    assert sections(text), "no ## sections"
    assert table_count_problems(text) == []


def test_every_table_names_its_commit() -> None:
    assert commit_problems(RESULTS.read_text()) == []
