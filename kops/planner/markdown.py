"""A plan as Markdown for a pull-request comment: the summary first, details collapsible.

Pure: returns a string. Destructive changes are flagged at the top, where a reviewer looks first. A plan made for
a goal list (`summary.goals`) shows its goal table under the summary, with each broker's disk and network-in
utilization before and after as charts, where every broker's capacity is known.
"""

from __future__ import annotations

from collections.abc import Sequence

from kops.model.plan import CapacityReport, Cordon, GoalOutcome, Move, Plan, Throttle
from kops.planner import tiered
from kops.planner.headroom import capacity_markdown
from kops.planner.mermaid import bar_chart
from kops.units import format_rate, format_size, size_unit


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown (no sizes)"
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h {minutes:02d}m" if hours else (f"{minutes}m {secs:02d}s" if minutes else f"{secs}s")


def _ids(values: tuple[int, ...]) -> str:
    return ",".join(map(str, values))


def placed(move: Move) -> str:
    """The log dirs a move names for the replicas it adds (`to_dirs`), as " (3: /data/d2)"; "" without any."""
    pairs = [f"{b}: {d}" for b, d in zip(move.to_replicas, move.to_dirs or (), strict=False) if d is not None]
    return f" ({', '.join(pairs)})" if pairs else ""


def cordons_said(cordons: Sequence[Cordon]) -> str:
    """What the plan cordons before its first batch (KIP-1066), for the text and Markdown alike."""
    each = "; ".join(f"broker {c.broker} ({','.join(c.dirs)})" for c in cordons)
    return f"Cordoned before batch 1 (cordoned.log.dirs, no new replica lands there): {each}; the rollback " \
           f"restores the value found."


def render_markdown(plan: Plan) -> str:
    """The plan as a pull-request comment: cautions and warnings first, the summary table, then the details
    folded (topic changes, batches, moves, per broker)."""
    lines = [f"### kops plan for `{plan.cluster}`", ""]
    if not plan.has_changes:
        lines += ["**No changes.** The cluster matches the declarations.", ""]
        return "\n".join(lines)
    if plan.summary.destructive:
        lines += ["> [!CAUTION]", "> **Destructive changes** — review before applying:"]
        lines += [f"> - {d}" for d in plan.summary.destructive]
        lines.append("")
    said = tiered.describe(plan.moves, plan.summary.remote_bytes)
    if said:
        lines += ["> [!NOTE]", f"> {said[0].upper() + said[1:]}.", ""]
    if plan.cordons:
        lines += ["> [!NOTE]", f"> {cordons_said(plan.cordons)}", ""]
    if plan.warnings:
        lines += ["> [!WARNING]", "> **Review** before applying:"]
        lines += [f"> - {w}" for w in plan.warnings]
        lines.append("")
    lines += _summary_table(plan) + _goals(plan) + _topic_changes(plan) + _batches_and_moves(plan) + _per_broker(plan)
    lines += capacity_markdown(plan.summary.capacity)
    if plan.rollback.irreversible:
        lines += ["Rollback cannot undo: " + "; ".join(plan.rollback.irreversible), ""]
    return "\n".join(lines)



def throttle_label(throttle: Throttle) -> str:
    """A batch's throttle for the tables: its rate, and how many brokers receive below it (their network-in room)."""
    if not throttle.rate:
        return "none"
    capped = f" ({len(throttle.caps)} broker{'s' if len(throttle.caps) > 1 else ''} capped)" if throttle.caps else ""
    return format_rate(throttle.rate) + capped

def _summary_table(plan: Plan) -> list[str]:
    s = plan.summary
    ratio = f" (lower bound {s.lower_bound_moves})" if s.lower_bound_moves else ""
    return [
        "| | |", "|---|---|",
        f"| topics created | {len(plan.creations)} |",
        f"| topics deleted | {len(plan.deletions)} |",
        f"| partitions added | {sum(len(a.assignment) for a in plan.partition_additions)} |",
        f"| config changes | {len(plan.configs)} |",
        f"| replica moves | {s.moves}{ratio} |",
        f"| leader-only changes | {s.leader_moves} |",
        f"| bytes to copy | {format_size(s.bytes)} |",
        *([f"| disk moves (within a broker) | {s.disk_moves}, {format_size(s.disk_bytes)} |"] if s.disk_moves else []),
        *([f"| not copied (tiered storage) | {format_size(s.remote_bytes)} in remote storage |"]
          if s.remote_bytes is not None else []),
        f"| batches | {len(plan.batches)} |",
        f"| estimated duration | {duration(s.estimated_seconds)} (lower bound {duration(s.lower_bound_seconds)}) |",
        "",
    ]


def goal_rows(goals: Sequence[GoalOutcome]) -> list[tuple[str, ...]]:
    """One row per goal, in priority order: name, unit, before, after, lower bound, moves, leader moves (a skipped
    goal says why instead), for the text and Markdown tables alike."""
    return [(o.name, f"skipped: {o.skipped}", "", "", "", "", "") if o.skipped else
            (o.name, o.unit, f"{o.before:.2f}", f"{o.after:.2f}", f"{o.lower_bound:.2f}", str(o.moves),
             str(o.leader_moves)) for o in goals]


CHARTED = (("disk", "Disk"), ("network_in", "Network-in"))  # the utilizations a goal plan draws per broker


def _goals(plan: Plan) -> list[str]:
    """The goal table, then per resource a chart of each broker's utilization before and after (or why not)."""
    s = plan.summary
    if not s.goals:
        return []
    lines = ["#### Goals", "", "| goal | unit | before | after | lower bound | moves | leader moves |",
             "|---|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in goal_rows(s.goals)]
    lines += ["", "The lower bound is the best figure any plan could reach, as racks and whole partitions allow; "
                  "moves are the optimizer's steps spent on each goal.", ""]
    brokers = sorted(set(s.replicas_before) | set(s.replicas_after))
    for resource, name in CHARTED:
        lines += _utilization_chart(s.capacity, brokers, resource, name)
    return lines


def _utilization_chart(report: CapacityReport | None, brokers: list[int], resource: str, name: str) -> list[str]:
    """Each broker's utilization of `resource` (% of its capacity) before and after, only where every broker's
    capacity is known: a chart with some brokers left out, or guessed, would mislead; the text says which."""
    usages = {b: (report.brokers.get(b, {}).get(resource) if report else None) for b in brokers}
    unknown = [b for b, u in usages.items() if u is None or u.capacity <= 0]
    if unknown:
        which = "any broker" if len(unknown) == len(brokers) else "broker(s) " + _ids(tuple(unknown))
        return [f"{name} utilization is not charted: no {name.lower()} capacity is known for {which} (declare it, or "
                f"pass --capacity).", ""]
    known = {b: u for b, u in usages.items() if u is not None}
    if not any(u.before or u.after for u in known.values()):
        return [f"{name} utilization is not charted: no broker carries any {resource} load (no "
                f"{'sizes' if resource == 'disk' else 'write rates'}).", ""]
    return bar_chart(f"{name} utilization per broker (% of capacity): bars after the plan, line before",
                     [str(b) for b in brokers], "% of capacity",
                     [("after", [round(100 * known[b].after / known[b].capacity, 2) for b in brokers]),
                      ("before", [round(100 * known[b].before / known[b].capacity, 2) for b in brokers])]) + [""]


def _topic_changes(plan: Plan) -> list[str]:
    if not (plan.creations or plan.deletions or plan.partition_additions or plan.partition_deletions or plan.configs):
        return []
    lines = ["<details><summary>Topic changes</summary>", "", "| topic | change |", "|---|---|"]
    for c in plan.creations:
        rf = len(next(iter(c.assignment.values()))) if c.assignment else 0
        lines.append(f"| `{c.topic}` | create: {len(c.assignment)} partitions, RF {rf} |")
    for d in plan.deletions:
        lines.append(f"| `{d.topic}` | **delete** ({d.partitions} partitions, {format_size(d.bytes)}) |")
    for a in plan.partition_additions:
        lines.append(f"| `{a.topic}` | add {len(a.assignment)} partitions |")
    for pd in plan.partition_deletions:
        lines.append(f"| `{pd.topic}` | **mark partitions {pd.undeleted_partition_count}..{pd.current_count - 1} for "
                     f"deletion** |")
    for cfg in plan.configs:
        parts = [f"`{k}`: {cfg.before.get(k, '(default)')} → {v}" for k, v in sorted(cfg.set.items())]
        parts += [f"`{k}`: {cfg.before[k]} → (default)" for k in cfg.remove]
        flag = " **(destructive)**" if cfg.destructive else ""
        lines.append(f"| `{cfg.entity}` | {'; '.join(parts)}{flag} |")
    return lines + ["", "</details>", ""]


def _charts(plan: Plan, brokers: list[int]) -> list[str]:
    """Bytes (where sizes are known) and leaders per broker, before and after: Mermaid bar charts a reviewer
    reads at a glance (the table below carries the same numbers for other viewers)."""
    s = plan.summary
    if not plan.batches and not plan.election:
        return []
    labels = [str(b) for b in brokers]
    lines: list[str] = []
    if any(s.bytes_before.values()) or any(s.bytes_after.values()):
        # in the unit of the fullest broker (a small cluster's bars all read 0.01 in GiB)
        unit, scale = size_unit(max([*s.bytes_before.values(), *s.bytes_after.values()]))
        lines += bar_chart(f"Bytes per broker ({unit}): bars after the plan, line before", labels, unit,
                           [("after", [round(s.bytes_after.get(b, 0) / scale, 2) for b in brokers]),
                            ("before", [round(s.bytes_before.get(b, 0) / scale, 2) for b in brokers])]) + [""]
    lines += bar_chart("Leaders per broker: bars after the plan, line before", labels, "leaders",
                       [("after", [s.leaders_after.get(b, 0) for b in brokers]),
                        ("before", [s.leaders_before.get(b, 0) for b in brokers])]) + [""]
    return lines


def _batches_and_moves(plan: Plan) -> list[str]:
    if not plan.batches:
        return []
    disk = bool(plan.summary.disk_moves)
    within = " disk moves | disk bytes |" if disk else ""
    lines = ["<details><summary>Batches</summary>", "", f"| batch | partitions | bytes |{within} estimate | throttle |",
             "|---|---|---|" + ("---|---|" if disk else "") + "---|---|"]
    for b in plan.batches:
        rate = throttle_label(b.throttle)
        within = f" {len(b.disk_moves)} | {format_size(b.disk_bytes)} |" if disk else ""
        lines.append(f"| {b.index} | {len(b.moves)} | {format_size(b.bytes)} |{within} {duration(b.estimate.seconds)} "
                     f"| {rate} |")
    lines += ["", "</details>", ""]
    if plan.moves:
        lines += ["<details><summary>Moves</summary>", "", "| partition | from | to | bytes | why |",
                  "|---|---|---|---|---|"]
        for m in plan.moves:
            remote = "" if m.remote_bytes is None else f" (+{format_size(m.remote_bytes)} remote, not copied)"
            lines.append(f"| `{m.topic}-{m.partition}` | {_ids(m.from_replicas)} | {_ids(m.to_replicas)}{placed(m)} | "
                         f"{format_size(m.copied_bytes)}{remote} | {m.reason} |")
        lines += ["", "</details>", ""]
    return lines + _disk_moves(plan)


def _disk_moves(plan: Plan) -> list[str]:
    """Each replica that changes log dir on its broker (kind `disk`), by batch: copied between that broker's own
    disks, not over the network, so listed apart from the moves."""
    if not plan.summary.disk_moves:
        return []
    lines = ["<details><summary>Disk moves (within a broker)</summary>", "",
             "| batch | broker | partition | from dir → to dir | bytes | why |", "|---|---|---|---|---|---|"]
    lines += [f"| {b.index} | {m.broker} | `{m.topic}-{m.partition}` | `{m.from_dir}` → `{m.to_dir}` | "
              f"{format_size(m.bytes)} | {m.reason} |" for b in plan.batches for m in b.disk_moves]
    return lines + ["", "</details>", ""]


def _per_broker(plan: Plan) -> list[str]:
    s = plan.summary
    brokers = sorted(set(s.replicas_before) | set(s.replicas_after))
    if not brokers:
        return []
    lines = _charts(plan, brokers)
    lines += ["<details><summary>Per broker</summary>", "", "| broker | replicas | leaders | bytes |",
              "|---|---|---|---|"]
    for broker in brokers:
        lines.append(f"| {broker} | {s.replicas_before.get(broker, 0)} → {s.replicas_after.get(broker, 0)} | "
                     f"{s.leaders_before.get(broker, 0)} → {s.leaders_after.get(broker, 0)} | "
                     f"{format_size(s.bytes_before.get(broker, 0))} → {format_size(s.bytes_after.get(broker, 0))} |")
    return lines + ["", "</details>", ""]
