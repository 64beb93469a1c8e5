"""A rehearsal report as Markdown for a pull request: the verdict first, a timeline of estimated beside measured
batches (Mermaid, drawn by GitHub and GitLab), then the tables any viewer can read."""

from __future__ import annotations

from kops.planner.markdown import duration
from kops.planner.mermaid import gantt
from kops.rehearsal.report import BatchResult, Report
from kops.units import format_rate, format_size

MAX_TIMELINE_BARS = 40  # beyond this a Gantt chart is unreadable; the table has every batch


def render_markdown(report: Report) -> str:
    icon = {0: "✅", 2: "⚠️", 3: "⛔"}.get(report.exit_code, "")
    lines = [f"### kops rehearsal of the plan for `{report.cluster}`", "", f"{icon} **{report.verdict()}**", ""]
    lines += _setup(report) + _timeline(report) + _batch_table(report) + _rollback(report)
    if report.notes:
        lines += ["**Notes**", ""] + [f"- {n}" for n in report.notes] + [""]
    return "\n".join(lines)


def _setup(r: Report) -> list[str]:
    s = r.scaling
    lines = [f"Clone on the **{r.engine}** engine: {r.sample}; built in {r.clone_seconds:.0f} s. Time scaled "
             f"×{s['factor']} (bytes ÷{s['bytes_divisor']}, rates ÷{s['rate_divisor']}); every duration below is "
             f"production time, except the clone's own latency, measured first and not multiplied "
             f"({r.latency_seconds:.2f} s "
             f"to complete an empty move, {r.latency_batch_seconds:.2f} s for as many as the largest batch). "
             f"Execution: {r.mode}."]
    if r.traffic:
        lines.append("Background traffic: " + ", ".join(f"`{t}` {format_rate(v)}" for t, v in sorted(r.traffic.items()))
                     + ".")
    return lines + [""]


def _timeline(r: Report) -> list[str]:
    rows = [b for b in r.batches if b.estimate_seconds or b.measured_seconds][:MAX_TIMELINE_BARS]
    if not rows:
        return []
    estimated, at = [], 0.0
    for b in rows:
        estimated.append((_name(b), at, b.estimate_seconds or 0.0))
        at += b.estimate_seconds or 0.0
    measured = [(_name(b), b.started_at or 0.0, b.measured_seconds) for b in rows
                if b.measured_seconds is not None]
    return gantt("Batches, estimated and measured (production time)",
                 [("Estimated", estimated), ("Measured", measured)]) + [""]


def _name(b: BatchResult) -> str:
    return "all moves" if b.index == 0 else f"batch {b.index}"


def _batch_table(r: Report) -> list[str]:
    lines = ["| batch | moves | bytes | estimate | measured | error | busiest destination | URP·s | slowest partition "
             "|",
             "|---|---|---|---|---|---|---|---|---|"]
    for b in r.batches:
        error = "n/a" if b.error is None else f"{b.error:+.0%}" + (" ⚠️" if b.off(r.tolerance) else "") + (
            "" if b.judged else " (too short to judge)")
        busiest = "-"
        if b.peak_broker is not None and b.peak_rate is not None:
            share = f" ({b.peak_rate / b.throttle:.0%} of throttle)" if b.throttle else ""
            busiest = f"broker {b.peak_broker}: {format_rate(b.peak_rate)}{share}"
        slowest = "-" if b.slowest is None else f"`{b.slowest}`: {b.slowest_why}"
        measured = duration(b.measured_seconds) if b.measured_seconds is not None else (
            "not run" if b.started_at is None else "did not finish")
        lines.append(f"| {_name(b)} | {b.moves} | {format_size(b.bytes)} | {duration(b.estimate_seconds)} | {measured} "
                     f"| "
                     f"{error} | {busiest} | {b.urp_seconds:,.0f} | {slowest} |")
        for stall in b.stalls:
            lines.append(f"| | | | | | | stalled: {stall} | | |")
    return lines + [""]


def _rollback(r: Report) -> list[str]:
    if r.rollback_stopped:
        said = f"Rollback stopped: {r.rollback_stopped}."
    else:
        said = (f"Rollback took "
                f"{duration(r.rollback_seconds)}") if r.rollback_seconds is not None else "Rollback: not run"
        said += "; the layout is back as the snapshot had it." if r.layout_restored else (
            "; the layout is NOT back: " + "; ".join(r.layout_differences[:5]))
    return [said, ""]
