"""`kops plan`: the difference between the declarations and the cluster, as batches of moves with a rollback."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from kops.cli import console
from kops.cli.connection import Address, Connection, connection_options, inventory_capacity, resolve
from kops.cli.fleet import declared_connection
from kops.cli.healing import healed_declared
from kops.cli.options import CapacityFile, ExtraVars, Inventory, Limit, SnapshotFile, parse_throttle
from kops.cli.state import AllowIncomplete, refuse_incomplete, write_atomically
from kops.cli.targets import cluster_snapshot, one_cluster
from kops.declare.capacity import declared_capacity
from kops.errors import ExitCode, UsageError
from kops.model import plan_format
from kops.model.capacity import CapacityDeclaration
from kops.model.cordons import cordoned, drained
from kops.model.desired import DesiredState
from kops.model.dir_moves import place
from kops.model.partitions import TopicPartition
from kops.model.plan import CapacityReport, GoalOutcome, Plan
from kops.model.snapshot import Snapshot
from kops.planner import tiered
from kops.planner.fingerprint import fingerprint
from kops.planner.headroom import capacity_notes, capacity_rows
from kops.planner.markdown import cordons_said, duration, goal_rows, placed, render_markdown, throttle_label
from kops.planner.planner import Policy, plan_targets
from kops.planner.planner import plan as make_plan
from kops.sizes.reader import Sizes, read_sizes
from kops.units import format_size
from kops.zk_layout.codecs.reassign_tool import exported, read_reassignment_json, write_reassignment_json


class PlanFormat(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


def _ids(values: tuple[int, ...] | list[int]) -> str:
    return ",".join(map(str, values)) or "-"


def render_text(plan: Plan, details: bool = True, dirs: bool | None = None) -> None:
    """The plan for a terminal; `details`: the Moves table (kops apply and kops rebalance leave it out), `dirs`:
    the disk moves table (as `details` unless said: kops rebalance shows it, they are few)."""
    out = console.out
    s = plan.summary
    out.print(f"[bold]Plan for {plan.cluster}[/] ({plan.connect or 'offline snapshot'}, cluster id {plan.cluster_id})")
    if not plan.has_changes:
        out.print("[green]No changes.[/] The cluster matches the declarations.")
        return
    _print_cautions(plan)
    topics = _topic_changes(plan)
    if topics.row_count:
        out.print(topics)
    if plan.batches:
        _print_batches(plan, details, details if dirs is None else dirs)
    brokers = sorted(set(s.replicas_before) | set(s.replicas_after))
    if brokers and (plan.batches or plan.creations):
        table = console.table("Brokers before -> after", ">Broker", ">Replicas", ">Leaders", ">Bytes")
        for broker in brokers:
            table.add_row(str(broker), f"{s.replicas_before.get(broker, 0)} -> {s.replicas_after.get(broker, 0)}",
                          f"{s.leaders_before.get(broker, 0)} -> {s.leaders_after.get(broker, 0)}",
                          f"{format_size(s.bytes_before.get(broker, 0))} -> "
                          f"{format_size(s.bytes_after.get(broker, 0)).strip()}")
        out.print(table)
    if s.capacity is not None:
        _print_capacity(s.capacity)
    _print_goals(s.goals)
    bound = f" (lower bound {s.lower_bound_moves})" if s.lower_bound_moves else ""
    out.print(
        f"[bold]Summary:[/] {len(plan.creations)} to create, {len(plan.deletions)} to delete, "
        f"{len(plan.configs)} config change(s), {s.moves} replica move(s){bound}, {s.leader_moves} leader-only, "
        f"{format_size(s.bytes)} to copy{_disk_summary(plan)} in {len(plan.batches)} batch(es), "
        f"estimated {duration(s.estimated_seconds)} (lower bound {duration(s.lower_bound_seconds)})"
    )
    said = tiered.describe(plan.moves, s.remote_bytes)
    if said:
        out.print(said[0].upper() + said[1:] + ".")
    if plan.election:
        out.print(f"Then a preferred-leader election for {len(plan.election)} partition(s).")
    for note in plan.rollback.irreversible:
        out.print(f"[dim]Rollback cannot undo: {note}[/]")


def _print_cautions(plan: Plan) -> None:
    """What a reviewer reads first: destructive changes, warnings, and what is cordoned before batch 1."""
    for text in plan.summary.destructive:
        console.out.print(f"[bold red]DESTRUCTIVE:[/] [red]{text}[/]")
    for text in plan.warnings:
        console.out.print(f"[bold yellow]warning:[/] {text}")
    if plan.cordons:
        console.out.print(cordons_said(plan.cordons))


def _print_goals(goals: tuple[GoalOutcome, ...]) -> None:
    """The play's goal list, as `kops rebalance --goals` prints it: figures before and after, the bound, the cost
    (nothing for a play without one)."""
    if not goals:
        return
    table = console.table("Goals", "Goal", "Unit", ">Before", ">After", ">Lower bound", ">Moves", ">Leader moves")
    for row in goal_rows(goals):
        table.add_row(*row)
    console.out.print(table)


def _print_capacity(report: CapacityReport) -> None:
    table = console.table("Capacity", ">Broker", "Resource", "Capacity", "Before -> after", ">Peak", ">Headroom")
    for row in capacity_rows(report):
        table.add_row(*row[:5], f"[red]{row[5]}[/]" if row[5].endswith("over") else row[5])
    console.out.print(table)
    for note in capacity_notes(report):
        console.out.print(f"[bold yellow]capacity:[/] {note}" if "over" in note else f"[dim]capacity: {note}[/]")


def _topic_changes(plan: Plan) -> Table:
    topics = console.table("Topic changes", "Topic", "Change")
    for c in plan.creations:
        rf = len(next(iter(c.assignment.values()))) if c.assignment else 0
        settings = ", ".join(f"{k}={v}" for k, v in c.config.items())
        topics.add_row(c.topic, f"[green]create[/] {len(c.assignment)} partitions, RF "
                                f"{rf}" + (f" ({settings})" if settings else ""))
    for d in plan.deletions:
        topics.add_row(d.topic, f"[bold red]delete[/] {d.partitions} partitions, {format_size(d.bytes)}")
    for a in plan.partition_additions:
        topics.add_row(a.topic, f"add partitions {min(a.assignment)}..{max(a.assignment)}")
    for pd in plan.partition_deletions:
        topics.add_row(pd.topic, f"[red]mark partitions {pd.undeleted_partition_count}..{pd.current_count - 1} for "
                                 f"deletion[/]")
    for cfg in plan.configs:
        parts = [f"{k}: {cfg.before.get(k, '(default)')} -> {v}" for k, v in sorted(cfg.set.items())]
        parts += [f"{k}: {cfg.before[k]} -> (default)" for k in cfg.remove]
        style = "red" if cfg.destructive else "yellow"
        topics.add_row(cfg.entity, f"[{style}]config[/] " + "; ".join(parts))
    return topics


def _print_batches(plan: Plan, details: bool, dirs: bool) -> None:
    disk = bool(plan.summary.disk_moves)
    extra = (">Disk moves", ">Disk bytes") if disk else ()
    batches = console.table("Batches", ">Batch", ">Partitions", ">Replica moves", ">Bytes", *extra, ">Estimate",
                            "Throttle")
    for b in plan.batches:
        rate = throttle_label(b.throttle)
        cells = (str(len(b.disk_moves)), format_size(b.disk_bytes)) if disk else ()
        batches.add_row(str(b.index), str(len(b.moves)), str(sum(len(m.adding) for m in b.moves)),
                        format_size(b.bytes), *cells, duration(b.estimate.seconds), rate)
    console.out.print(batches)
    if details:
        moves = console.table("Moves", "Partition", "From", "To", ">Bytes", "Why")
        for m in plan.moves:
            kind = "" if m.kind == "data" else " [dim](leader only)[/]"
            moves.add_row(f"{m.topic}-{m.partition}{kind}", _ids(m.from_replicas), _ids(m.to_replicas) + placed(m),
                          format_size(m.copied_bytes), m.reason)
        if moves.row_count:
            console.out.print(moves)
    if dirs and disk:
        _print_disk_moves(plan)


def _print_disk_moves(plan: Plan) -> None:
    """Each replica that changes log dir on its broker (kind `disk`), by batch: the copy stays on that broker,
    from one of its disks to another, so it shows apart from the moves between brokers."""
    table = console.table("Disk moves (within a broker)", ">Batch", ">Broker", "Partition", "From dir -> to dir",
                          ">Bytes", "Why")
    for b in plan.batches:
        for m in b.disk_moves:
            table.add_row(str(b.index), str(m.broker), f"{m.topic}-{m.partition}", f"{m.from_dir} -> {m.to_dir}",
                          format_size(m.bytes), m.reason)
    console.out.print(table)


def _disk_summary(plan: Plan) -> str:
    """The summary's disk moves, said beside the bytes between brokers (nothing for a plan without any)."""
    s = plan.summary
    if not s.disk_moves:
        return ""
    return f" between brokers (and {format_size(s.disk_bytes).strip()} within brokers: {s.disk_moves} disk move(s))"


OutDir = Annotated[Path | None, typer.Option(
    "--out-dir", help="Plan every cluster the playbook targets within -l (a fleet): DIR/CLUSTER.plan.json each, and "
                      "DIR/CLUSTER.md with --format markdown.")]
SnapshotDir = Annotated[Path | None, typer.Option(
    "--snapshot-dir", help="Plan a fleet offline from DIR/CLUSTER.json (as kops state -l ... --out-dir DIR writes "
                           "them).")]
Forks = Annotated[int, typer.Option("--forks", help="Clusters read and planned at once (a fleet).", min=1)]


def _said_live(sizes: dict[TopicPartition, int] | None) -> dict[TopicPartition, int]:
    """Sizes the cluster itself reported (DescribeLogDirs), when there are any; said, as --sizes would be."""
    if sizes:
        console.info(f"sizes of {len(sizes)} partitions from the cluster (DescribeLogDirs)")
    return sizes or {}


@connection_options
def plan(
    connection: Connection,
    playbook: Annotated[Path | None, typer.Argument(help="The playbook to plan.", show_default=False)] = None,
    inventory: Inventory = None,
    limit: Limit = None,
    extra_vars: ExtraVars = None,
    snapshot: SnapshotFile = None,
    sizes: Annotated[Path | None, typer.Option("--sizes", help="Partition sizes (kops sizes summarize "
                                                               "output).")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the plan (kops-plan/2 JSON) here.")] = None,
    output_format: Annotated[PlanFormat, typer.Option(
        "--format", "-f", help="text, json or markdown.", case_sensitive=False)] = PlanFormat.text,
    detailed_exitcode: Annotated[bool, typer.Option("--detailed-exitcode", help="Exit 0 when nothing changes, 2 when "
                                                                                "something does.")] = False,
    export_kafka: Annotated[Path | None, typer.Option("--export-kafka", help="Also write the moves as "
                                                                             "kafka-reassign-partitions.sh "
                                                                             "JSON.")] = None,
    import_kafka: Annotated[Path | None, typer.Option("--import-kafka", help="Plan the moves of a "
                                                                             "kafka-reassign-partitions.sh JSON file "
                                                                             "instead of a playbook.")] = None,
    throttle: Annotated[str | None, typer.Option("--throttle", help="Replication throttle per broker, e.g. 50MiB/s "
                                                                    "(overrides execution.throttle).")] = None,
    allow_in_flight: Annotated[bool, typer.Option("--allow-in-flight", help="Plan even when partitions to move are "
                                                                            "being reassigned (from their "
                                                                            "targets).")] = False,
    allow_incomplete: AllowIncomplete = False,
    capacity: CapacityFile = None,
    out_dir: OutDir = None,
    snapshot_dir: SnapshotDir = None,
    forks: Forks = 5,
) -> None:
    """Compute what would change: topic creations and deletions, partition additions, replication-factor and
    placement changes, config changes, decommissions, rebalancing and leader balance, as batches of moves with
    throttles, estimates and a rollback. Nothing is written to the cluster (but for a playbook whose rebalance
    section sets heal_after: which brokers are absent, noted as kops rebalance notes them; past heal_after the
    plan heals them first, docs/design/healing.md §5).

    Examples:

    \b
      kops plan playbooks/platform.yml -b broker1:9092 -o plans/staging.json
      kops plan playbooks/platform.yml -i inventories/example -l staging \\
          -o plans/staging.json
      kops plan playbooks/platform.yml -i inventories/example -l prod-eu \\
          --snapshot snaps/prod-eu.json --format markdown
      kops plan --import-kafka reassign.json -z zk1:2181/kafka \\
          --throttle 30MiB/s -o plans/imported.json
      kops plan playbooks/platform.yml -i inventories/example -l prod-eu \\
          --capacity cruise-control/capacity.json
      kops plan playbooks/platform.yml -i inventories/example -l prod \\
          --out-dir plans/prod --snapshot-dir snaps/prod --detailed-exitcode

    Exit codes: 0 planned (with --detailed-exitcode: no changes), 2 changes (only with --detailed-exitcode), 1 error,
    3 the snapshot is incomplete (cluster metadata still propagating; --allow-incomplete plans anyway), or a
    healing the playbook asks for (rebalance.heal_after) is due and refused.
    Over a fleet (--out-dir, several clusters): 0 nothing changes anywhere, 2 something changes somewhere
    (with --detailed-exitcode), 1 any cluster failed, each named.
    """
    known = read_sizes(sizes) if sizes is not None else Sizes()
    from_file = declared_capacity(capacity, None)  # a bad file is refused before the cluster is read
    policy = Policy(throttle=parse_throttle(throttle), allow_in_flight=allow_in_flight, growth=known.growth,
                    remote=known.remote)
    reading = _Reading(connection, snapshot, allow_incomplete, known.bytes,
                       {} if sizes is None and snapshot is None else None)
    if import_kafka is not None:
        if playbook is not None:
            raise UsageError("give a playbook or --import-kafka, not both")
        if inventory is not None:  # the inventory's cluster: its address, client properties and capacity
            reading.address = resolve(connection, inventory, limit) if snapshot is None else None
            from_file = declared_capacity(capacity, inventory_capacity(inventory, limit))
        result = _plan_imported(import_kafka, reading, policy, (from_file, known.write), limit if inventory else None)
    elif playbook is None:
        raise UsageError("no playbook given", hint="kops plan PLAYBOOK -i INVENTORY [-l CLUSTER], or --import-kafka "
                                                   "FILE")
    elif out_dir is not None or snapshot_dir is not None:
        from kops.cli.fleet_plan import FleetPlanning, plan_fleet  # noqa: PLC0415 - a fleet only

        if out is not None or export_kafka is not None:
            raise UsageError("-o and --export-kafka name one cluster's files", hint="a fleet writes into --out-dir")
        fleet = FleetPlanning(connection, playbook, inventory, limit, extra_vars, out_dir, snapshot_dir, forks)
        raise typer.Exit(plan_fleet(fleet, _fleet_planner(reading, policy, (capacity, known)), render_text,
                                    output_format.value, detailed_exitcode))
    else:
        declarations, desired = one_cluster(playbook, inventory, limit, extra_vars, connection.zookeeper)
        reading.connection = declared_connection(connection, desired, inventory)
        result = plan_declared(desired, declarations.digest, reading, policy, (capacity, known))
    _write(result, out, export_kafka)
    _show(result, output_format)
    if detailed_exitcode and result.has_changes:
        raise typer.Exit(ExitCode.CHANGES)


def plan_declared(desired: DesiredState, digest: str, reading: _Reading, policy: Policy,
                  capacity: tuple[Path | None, Sizes]) -> Plan:
    """One cluster's plan from its declarations: its snapshot (file or live), the plan, its capacity report;
    `capacity` is the --capacity file and the sizes read with --sizes."""
    capacity_file, known = capacity
    desired = replace(desired, capacity=declared_capacity(capacity_file, desired.capacity))
    snap = reading.snapshot(desired)
    sizes = reading.sizes()
    policy = replace(policy, playbook_digest=digest, capacity=desired.capacity, write=known.write)
    live = None if reading.snapshot_file is not None else reading.connection  # offline never heals
    result = healed_declared(desired, snap, live, sizes, policy) or make_plan(desired, snap, sizes, policy)
    return replace(_with_cordons(result, desired, snap), serial=desired.serial)


def _with_cordons(result: Plan, desired: DesiredState, snap: Snapshot) -> Plan:
    """The dirs the plan drains (decommissioned brokers, `remove_log_dirs`) cordoned before its first batch where
    the cluster's finalized metadata.version allows it (KIP-1066; the snapshot's, read with DescribeFeatures);
    elsewhere, and where it is not known, the plan says new topics may still land there (kops/model/cordons.py)."""
    drains = drained(desired.brokers.decommission, desired.brokers.remove_log_dirs)
    return cordoned(result, drains, snap.metadata_version)


def _fleet_planner(reading: _Reading, policy: Policy, capacity: tuple[Path | None, Sizes]
                   ) -> Callable[[DesiredState, str, Connection, Path | None], Plan]:
    """How a fleet plans one of its clusters: plan_declared with the cluster's connection and snapshot file."""
    if reading.snapshot_file is not None:
        raise UsageError("--snapshot names one cluster's snapshot", hint="a fleet plans from --snapshot-dir DIR")

    def plan_one(desired: DesiredState, digest: str, connection: Connection, snapshot_file: Path | None) -> Plan:
        live: dict[TopicPartition, int] | None = {} if reading.live is not None and snapshot_file is None else None
        one = replace(reading, connection=connection, snapshot_file=snapshot_file, live=live, quiet=True)
        return plan_declared(desired, digest, one, policy, capacity)

    return plan_one


@dataclass
class _Reading:
    """Where the cluster's state and the partitions' sizes come from: a snapshot file or the cluster, and sizes
    from --sizes or, read live without --sizes, from the cluster itself (`live` collects them)."""

    connection: Connection
    snapshot_file: Path | None
    allow_incomplete: bool
    given: dict[TopicPartition, int]
    live: dict[TopicPartition, int] | None
    quiet: bool = False  # a fleet: no spinner
    address: Address | None = None  # an import's cluster, from the inventory (a playbook's comes with it)

    def snapshot(self, desired: DesiredState | None) -> Snapshot:
        snap = cluster_snapshot(desired, self.connection, self.snapshot_file, self.live, self.quiet, self.address)
        refuse_incomplete(snap, self.allow_incomplete)
        return snap

    def sizes(self) -> dict[TopicPartition, int]:
        return self.given or _said_live(self.live)


def _plan_imported(path: Path, reading: _Reading, policy: Policy,
                   capacity: tuple[CapacityDeclaration | None, Mapping[TopicPartition, float]],
                   name: str | None = None) -> Plan:
    """The moves of a kafka-reassign-partitions.sh file, planned as kops plans its own (batches, throttles), with
    `capacity` (the declaration and the write rates) reported; `name`: the inventory's cluster (-l)."""
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read: {exc.strerror}", where=str(path)) from None
    entries = read_reassignment_json(text, str(path), disk_moves=True)
    snap = reading.snapshot(None)
    targets = {TopicPartition(e.topic, e.partition): e.replicas for e in entries}
    connection = reading.connection
    cluster = name or connection.zookeeper or connection.bootstrap_server or snap.connect or "cluster"
    declared, write = capacity
    sizes = reading.sizes()
    moved = plan_targets(snap, targets, cluster=cluster, policy=replace(policy, capacity=declared, write=write),
                         sizes=sizes, where=str(path))
    placed = {TopicPartition(e.topic, e.partition): e.placed for e in entries if e.placed}
    if not placed:
        return moved
    result = place(moved, snap, placed, sizes, policy.throttle, policy.port_rate(), str(path),
                   "imported from kafka-reassign-partitions JSON")
    return replace(result, fingerprint=fingerprint(snap, {m.topic for m in result.moves + result.disk_moves}))


def _write(result: Plan, out: Path | None, export_kafka: Path | None) -> None:
    """The plan file (--out) and the moves as kafka-reassign-partitions.sh JSON (--export-kafka)."""
    if out is not None:
        write_atomically(out, plan_format.dumps(result))
        console.info(f"wrote plan to {out}")
    if export_kafka is not None:
        entries_out = exported(result)
        write_atomically(export_kafka, write_reassignment_json(entries_out) + b"\n")
        console.info(f"wrote {len(entries_out)} move(s) as kafka-reassign-partitions JSON to {export_kafka}")


def _show(result: Plan, output_format: PlanFormat) -> None:
    if output_format is PlanFormat.json:
        console.print_json(plan_format.to_document(result))
    elif output_format is PlanFormat.markdown:
        console.out.print(render_markdown(result), markup=False, highlight=False, soft_wrap=True)
    else:
        render_text(result)
