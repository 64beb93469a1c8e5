"""A plan's disk moves (kind `disk`, issue 37) in `kops plan`'s text and Markdown output: each batch says how
many it runs and their bytes, each disk move is listed (batch, broker, from dir → to dir, partition, bytes), and
the summary counts them apart from the bytes copied between brokers. The plan is the one
tests/unit/test_dir_moves.py imports from a kafka-reassign-partitions file naming log dirs."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console

from kops.cli import console
from kops.cli.plan import render_text
from kops.model.plan import Plan
from kops.planner.markdown import render_markdown
from tests.unit.test_dir_moves import imported


def text_of(plan: Plan, details: bool = True, dirs: bool | None = None) -> str:
    """render_text's output, as a pipe gets it (no colour, wide)."""
    buffer = io.StringIO()
    saved = console.out
    console.out = Console(file=buffer, no_color=True, width=200, highlight=False)
    try:
        render_text(plan, details=details, dirs=dirs)
    finally:
        console.out = saved
    return buffer.getvalue()


def test_the_markdown_lists_each_disk_move_under_its_batch_and_counts_them_in_the_summary() -> None:
    plan = imported()
    markdown = render_markdown(plan)
    last = plan.batches[-1].index
    assert "| disk moves (within a broker) | 1, 1.0 MiB |" in markdown
    assert "| batch | partitions | bytes | disk moves | disk bytes | estimate | throttle |" in markdown
    assert f"| {last} | 0 | 0 B | 1 | 1.0 MiB | 0s | 10.0 MiB/s |" in markdown
    assert "<details><summary>Disk moves (within a broker)</summary>" in markdown
    assert "| `orders-1` | 2,1 | 2,3 (3: /data/b3/d2) | 2.0 MiB |" in markdown  # a new replica placed in a dir
    assert f"| {last} | 1 | `orders-0` | `/data/b1/d1` → `/data/b1/d2` | 1.0 MiB | imported |" in markdown


def test_the_text_output_shows_the_disk_moves_batch_and_summary() -> None:
    plan = imported()
    text = text_of(plan)
    last = plan.batches[-1].index
    assert "Disk moves (within a broker)" in text
    row = next(line for line in text.splitlines() if "/data/b1/d1 -> /data/b1/d2" in line)
    assert row.split() == [str(last), "1", "orders-0", "/data/b1/d1", "->", "/data/b1/d2", "1.0", "MiB", "imported"]
    batch = next(line for line in text.splitlines() if line.split()[:1] == [str(last)] and "MiB/s" in line)
    assert batch.split()[:8] == [str(last), "0", "0", "0", "B", "1", "1.0", "MiB"]
    assert next(line for line in text.splitlines() if "orders-1" in line).split()[:5] == \
        ["orders-1", "2,1", "2,3", "(3:", "/data/b3/d2)"]
    assert "(and 1.0 MiB within brokers: 1 disk move(s))" in text
    brief = text_of(plan, details=False)  # as kops apply prints it: the batches' columns, not the list
    assert "Disk moves (within a broker)" not in brief and "Disk moves" in brief
    # kops rebalance leaves out the Moves but lists its disk moves (found by an outside check: it listed none)
    rebalanced = text_of(plan, details=False, dirs=True)
    assert "Disk moves (within a broker)" in rebalanced and "orders-1" not in rebalanced


def test_a_plan_without_disk_moves_shows_no_disk_columns_or_section() -> None:
    plan = imported()
    plain = replace(plan, batches=plan.batches[:-1], summary=replace(plan.summary, disk_moves=0, disk_bytes=0),
                    warnings=())
    markdown = render_markdown(plain)
    assert "disk moves" not in markdown.lower()
    assert "| batch | partitions | bytes | estimate | throttle |" in markdown
    text = text_of(plain)
    assert "Disk moves" not in text and "within brokers" not in text


def test_the_bytes_chart_of_a_small_cluster_is_drawn_in_its_own_unit() -> None:
    """Found by an outside check: a cluster of a few MiB per broker drew every bar at 0.01 (GiB)."""
    markdown = render_markdown(imported())
    assert 'title "Bytes per broker (MiB) bars after the plan, line before"' in markdown
    assert 'y-axis "MiB"' in markdown and "bar [0.01" not in markdown
