"""The CI review's fleet table: one row per cluster above the per-cluster plans (docs/ci-review.md)."""

from __future__ import annotations

from collections.abc import Sequence

from kops.fleet.results import ClusterResult
from kops.units import format_size


def fleet_table(found: Sequence[ClusterResult], estimates: dict[str, float]) -> str:
    """`found` as a Markdown table: cluster, outcome, moves, bytes, estimate; failures with their reason."""
    changed = sum(1 for r in found if r.status == "changed")
    failed = sum(1 for r in found if r.status == "failed")
    lines = [f"## kops plan for {len(found)} cluster(s): {changed} with changes"
             + (f", {failed} failed" if failed else ""), "",
             "| cluster | plan | moves | bytes | estimate |", "|---|---|---:|---:|---:|"]
    for r in found:
        what = {"changed": "changes", "ok": "no changes"}.get(r.status, f"**{r.status}**: {r.reason or ''}")
        seconds = estimates.get(r.cluster)
        lines.append(f"| `{r.cluster}` | {what} | {r.moves} | {format_size(r.bytes).strip()} | "
                     f"{'-' if seconds is None else _duration(seconds)} |")
    return "\n".join(lines) + "\n"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
