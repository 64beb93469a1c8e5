"""Every Mermaid block kops writes is drawn by the Mermaid CLI (npm's @mermaid-js/mermaid-cli driving Debian's
Chromium, installed by `make setup`): the per-broker charts of `kops plan --format markdown` (the golden
scenarios, among them `goals`, a playbook's goal list with its disk and network-in utilization charts), a
`kops rebalance --goals` plan's charts, a rehearsal report's timeline, and the real report in docs/rehearse.md.
A syntax error fails."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kops.planner.markdown import render_markdown as plan_markdown
from kops.rehearsal.markdown import render_markdown
from tests.unit.test_goal_table import goal_plan
from tests.unit.test_rehearsal import PLAN, report_of

ROOT = Path(__file__).resolve().parents[2]
MMDC = ROOT / ".kops" / "mermaid" / "node_modules" / ".bin" / "mmdc"
BLOCK = re.compile(r"^```mermaid\n(.*?)^```$", re.M | re.S)

pytestmark = pytest.mark.skipif(not MMDC.exists() or shutil.which("chromium") is None,
                                reason="the Mermaid CLI is not installed (make mermaid: npm and Chromium)")


def blocks() -> list[tuple[str, str]]:
    """(where, diagram) for every Mermaid block kops wrote."""
    sources = {f"tests/golden/{p.parent.name}/expected.md": p.read_text()
               for p in sorted((ROOT / "tests" / "golden").glob("*/expected.md"))}
    sources["a rehearsal report"] = render_markdown(report_of({b.index: (b.estimate.seconds or 0) / 8
                                                              for b in PLAN.batches}))
    sources["a goal list's plan"] = plan_markdown(goal_plan())
    sources["docs/rehearse.md"] = (ROOT / "docs" / "rehearse.md").read_text()
    return [(where, m.group(1)) for where, text in sources.items() for m in BLOCK.finditer(text)]


def test_there_are_charts_and_timelines_to_draw() -> None:
    found = blocks()
    assert any(d.startswith("xychart-beta") for _w, d in found)
    for source in ("a goal list's plan", "tests/golden/goals/expected.md"):
        titles = [d.splitlines()[1] for w, d in found if w == source]
        assert sum("utilization per broker" in t for t in titles) == 2, (source, titles)  # disk and network in
    assert sum(d.startswith("gantt") for _w, d in found) >= 2  # the rendered report and the docs' real one


def draw(config: Path, source: Path, out: Path) -> str | None:
    """Why mmdc failed to draw `source` into `out`, or None when it drew it."""
    drawn = subprocess.run([str(MMDC), "-p", str(config), "-i", str(source), "-o", str(out), "-q"],
                           capture_output=True, text=True, timeout=300)
    if drawn.returncode != 0:
        return " ".join((drawn.stderr or drawn.stdout).strip().splitlines()[-1:])
    return None


def test_mermaid_draws_every_block(tmp_path: Path) -> None:
    """All blocks in one Markdown file, drawn by one browser (a browser per block took 15 s each); only when
    that fails is each block drawn alone, to name the one that does not parse."""
    config = tmp_path / "puppeteer.json"
    config.write_text(json.dumps({"executablePath": shutil.which("chromium"),
                                  "args": ["--no-sandbox", "--disable-gpu"]}))
    found = blocks()
    together = tmp_path / "all.md"
    together.write_text("".join(f"```mermaid\n{diagram}```\n\n" for _where, diagram in found))
    failed = draw(config, together, tmp_path / "all-out.md")
    svgs = [tmp_path / f"all-out-{index}.svg" for index in range(1, len(found) + 1)]
    if failed is None and all(svg.exists() and "<svg" in svg.read_text()[:2000] for svg in svgs):
        return
    failures = []
    for index, (where, diagram) in enumerate(found):
        source, out = tmp_path / f"{index}.mmd", tmp_path / f"{index}.svg"
        source.write_text(diagram)
        why = draw(config, source, out)
        if why is not None or not out.exists() or "<svg" not in out.read_text()[:2000]:
            failures.append(f"{where}: {why}")
    assert failures == [], failed
