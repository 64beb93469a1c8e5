"""`kops status` and `kops cancel`: what is running on a cluster, and asking it to stop."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from kops.cli import console
from kops.cli.connection import Connection, connection_options, open_cluster, resolve
from kops.cli.fleet_status import cancel_fleet, fleet_targets, repeat, status_fleet
from kops.cli.healing import bookkept
from kops.cli.options import Format, Inventory, Limit, OutputFormat
from kops.cli.state import ADMIN_API_MOVE
from kops.cluster.port import Cluster
from kops.errors import KopsError
from kops.executor import progress
from kops.executor.journal import Journal
from kops.executor.record import DONE, RUNNING, ExecutionRecord
from kops.holder import dead_local, describe, holder_info
from kops.model.partitions import TopicPartition
from kops.model.snapshot import ADMIN_API, Snapshot
from kops.model.throttle_keys import ALL_KEYS
from kops.units import format_size

INTERRUPTED = "interrupted"  # a record left `running` by a process that stopped before it finished
STALLED_AFTER_SECONDS = 30  # no progress recorded for this long: kops status says the batch is stalled
FleetArg = Annotated[Path | None, typer.Argument(
    help="A fleet's folder of plans (kops apply DIR): one row per cluster. -i/-l selecting several clusters is a "
         "fleet too.", show_default=False)]


def running_it(holder: dict[str, Any] | None, record: ExecutionRecord) -> bool:
    """Whether a live process runs `record` now: the lock's holder names it, and is not a kops on this host whose
    process is gone (killed: its lock lapses when its ZooKeeper session or lease expires)."""
    return holder is not None and holder.get("execution") == record.id and not dead_local(holder)


def state_of(record: ExecutionRecord, running: bool) -> str:
    """The execution's state as kops status shows it: the record's, except that a record still `running` that
    no live process runs is `interrupted` (its process stopped before it finished: kill -9, a crash, a lost lock).
    The record itself is left as written: `--resume` and `kops rollback` read it so."""
    return INTERRUPTED if record.status == RUNNING and not running else record.status


def next_steps(record: ExecutionRecord, holder: dict[str, Any] | None) -> list[str]:
    """The commands that take an unfinished execution on, while no live process holds the lock (a holder would
    refuse them, or is taking it on itself): an apply resumes or rolls back, a rollback resumes (an apply waits
    for its rollback to finish)."""
    if record.status == DONE or (holder is not None and not dead_local(holder)):
        return []
    plan = record.plan_path
    if record.kind == "rollback":
        return [f"kops rollback {plan} --resume"]
    return [f"kops apply {plan} --resume", f"kops rollback {plan}"]


def _execution_doc(record: ExecutionRecord | None, holder: dict[str, Any] | None, snapshot: Snapshot,
                   lags: progress.Lags) -> dict[str, Any] | None:
    if record is None:
        return None
    current = record.current
    running = running_it(holder, record)
    doc: dict[str, Any] = {
        "id": record.id, "kind": record.kind, "of": record.of, "status": state_of(record, running),
        "stop_reason": record.stop_reason, "plan": record.plan_path,
        "batches": len(record.batches), "batches_done": sum(1 for b in record.batches if b.status == "done"),
        "batch": current.index if current else None, "started_at": record.started_at, "updated_at": record.updated_at,
        "next_steps": next_steps(record, holder),
    }
    if current is not None:
        done = progress.done_moves(snapshot, current.moves)
        doc["batch_partitions"], doc["batch_done"] = len(current.moves), len(done)
        elapsed = time.time() - (current.started_at or time.time())
        if doc["status"] == RUNNING and len(done) < len(current.moves):
            measured = progress.measure(current.index, len(record.batches), current.moves, snapshot, elapsed, lags, {})
            eta = measured.eta if measured.eta is not None else progress.seconds_left(  # no sizes: partitions
                len(current.moves), len(done), len(done) / elapsed if done and elapsed > 0 else None)
            if eta is not None:
                doc["batch_eta_seconds"] = round(eta, 1)
        quiet = time.time() - (current.progress_at or current.started_at or time.time())
        if doc["status"] == RUNNING and len(done) < len(current.moves) and quiet >= STALLED_AFTER_SECONDS:
            doc["stalled_seconds"] = round(quiet)
    return doc


def _throttles(snapshot: Snapshot, record: ExecutionRecord | None) -> list[dict[str, Any]]:
    ours = record.throttles_written if record is not None else {}
    rows = []
    entities = [("topics", name, t.config) for name, t in sorted(snapshot.topics.items())]
    entities += [("brokers", name, c) for name, c in sorted(snapshot.broker_configs.items())]
    for entity_type, name, config in entities:
        for key in ALL_KEYS:
            if key in config and config[key] != "":
                by_kops = ours.get(f"{entity_type}/{name}", {}).get(key) == config[key]
                rows.append({"entity": f"{entity_type}/{name}", "key": key, "value": config[key],
                             "set_by": f"kops {record.id}" if by_kops and record else "not kops"})
    return rows


def _in_flight(snapshot: Snapshot, cluster: Cluster) -> list[dict[str, Any]]:
    rows = []
    moving = snapshot.in_flight()
    found = cluster.lags([(TopicPartition(m.topic, m.partition), b) for m in moving for b in m.adding])
    lags = {(tp.topic, tp.partition, broker): lag for (tp, broker), lag in found.items()}
    for m in moving:
        row: dict[str, Any] = {"topic": m.topic, "partition": m.partition, "replicas": list(m.replicas),
                               "adding": list(m.adding), "removing": list(m.removing),
                               "target": list(m.target) if m.target else None, "requested": m.requested,
                               "started_by": started_by(m.requested, snapshot.connect)}
        lag = [lags[(m.topic, m.partition, b)] for b in m.adding if (m.topic, m.partition, b) in lags]
        if lag:
            row["lag_bytes"] = sum(lag)
        rows.append(row)
    return rows


def started_by(requested: bool, connect: str | None) -> str:
    """How a reassignment in flight was started, as far as the transport tells: through ZooKeeper, the
    reassignment znode or (topic znodes only) the Admin API; through the Admin API (kafka://SERVERS), every one
    is what ListPartitionReassignments lists, znode or not (a KRaft cluster has none)."""
    if (connect or "").startswith(ADMIN_API):
        return ADMIN_API_MOVE
    return "znode" if requested else "admin API"


def _collect(cluster: Cluster) -> dict[str, Any]:
    """What kops status shows. Where kops's own records cannot be read because their partition (`__kops`) is
    offline or under-replicated, the lock and the last execution are unknown (`records_unread` says why) and the
    rest is shown: that is when status is asked."""
    snapshot = cluster.snapshot()
    holder, unread = bookkept(snapshot, cluster.holder)
    record = None
    if unread is None:
        record, unread = bookkept(snapshot, lambda: _last_record(cluster, holder))
    doc = {"lock": holder, "execution": _execution_doc(record, holder, snapshot, cluster.lags),
           "in_flight": _in_flight(snapshot, cluster), "throttles": _throttles(snapshot, record),
           "offline": _offline(snapshot)}
    return doc | ({"records_unread": unread} if unread else {})


def _last_record(cluster: Cluster, holder: dict[str, Any] | None) -> ExecutionRecord | None:
    """The execution the lock's holder runs, else the last one recorded."""
    journal = Journal(cluster.records())
    if holder and holder.get("execution"):
        try:
            return journal.load(holder["execution"])
        except KopsError:
            pass
    return journal.latest()


def _offline(snapshot: Snapshot) -> list[dict[str, Any]]:
    """Partitions without a live leader, and the replicas they wait for: the ISR, and where Kafka keeps them
    (KIP-966, read through the Admin API) the eligible leader replicas, which it elects cleanly once the ISR is
    empty (outside both only where unclean.leader.election.enable allows it). `eligible_leaders` and
    `last_known_elr` are null where they were not read."""
    rows = []
    for tp in snapshot.offline():
        part = snapshot.partition(tp)
        assert part is not None
        eligible = snapshot.eligible(tp)
        rows.append({"topic": tp.topic, "partition": tp.partition, "replicas": list(part.replicas),
                     "isr": list(part.isr), "live_replicas": sorted(set(part.replicas) & snapshot.live_broker_ids),
                     "eligible_leaders": list(eligible.replicas) if eligible else None,
                     "last_known_elr": list(eligible.last_known) if eligible else None})
    return rows


def _brokers(ids: list[int], one: str, several: str) -> str:
    return f"broker {ids[0]} ({one})" if len(ids) == 1 else f"one of brokers {', '.join(map(str, ids))} ({several})"


def offline_line(row: dict[str, Any]) -> str:
    """What an offline partition waits for, in words true of every cluster: an empty ISR does not mean no clean
    leader is left where Kafka keeps eligible leader replicas (KRaft with eligible.leader.replicas.version=1)."""
    isr, elr, known = row["isr"], row["eligible_leaders"], row["last_known_elr"]
    line = f"{row['topic']}-{row['partition']} has no live leader; "
    if isr:
        line += (f"it waits for an in-sync replica ({', '.join(map(str, isr))})"
                 + (f" or {_brokers(elr, 'an eligible leader replica', 'eligible leader replicas')}" if elr else "")
                 + " to return")
    elif elr:
        line += f"it waits for {_brokers(elr, 'an eligible leader replica', 'eligible leader replicas')} to return"
    elif elr is not None:
        line += ("Kafka records no in-sync or eligible leader replica for it"
                 + (f" (last known: {', '.join(map(str, known))})" if known else ""))
    else:
        line += (f"its ISR is empty, yet a replica outside it may be an eligible leader replica (KIP-966, KRaft), "
                 f"which Kafka elects cleanly when it returns; kops could not read them here: `kafka-topics.sh "
                 f"--bootstrap-server SERVERS --describe --unavailable-partitions --topic {row['topic']}` shows "
                 f"them (Elr)")
    waiting = set(isr) | set(elr or ())
    out_of_sync = [b for b in row["live_replicas"] if b not in waiting]
    return line + (f"; live replicas {out_of_sync} are not in sync" if out_of_sync and (isr or elr) else "")


def _print_lock(doc: dict[str, Any]) -> bool:
    """The lock's line (or why it is unknown); whether its holder's process is gone."""
    holder = doc["lock"]
    if doc.get("records_unread"):
        console.warning(f"kops's records cannot be read now, so the lock and the last execution are unknown: "
                        f"{doc['records_unread']}")
    gone = holder is not None and dead_local(holder)
    console.out.print(f"[bold]Running:[/] {describe(holder)}" + (" [red](its process is gone: the lock lapses when "
                                                                  "its session or lease expires)[/]" if gone else "")
                      if holder else "[bold]Running:[/] no kops execution")
    return gone


def _render(doc: dict[str, Any]) -> None:
    out = console.out
    holder, execution = doc["lock"], doc["execution"]
    gone = _print_lock(doc)
    if execution:
        current = holder is not None and holder.get("execution") == execution["id"] and not gone
        status = execution["status"]
        if status == INTERRUPTED:
            status = f"[red]{INTERRUPTED}[/] (its process stopped before it finished)"
        line = (f"{'Current' if current else 'Last'} execution {execution['id']} ({execution['kind']}): "
                f"{status}, {execution['batches_done']}/{execution['batches']} batches done")
        if execution.get("batch"):
            line += (f"; batch {execution['batch']}: "
                     f"{execution.get('batch_done', 0)}/{execution.get('batch_partitions', 0)} partitions")
            if execution.get("batch_eta_seconds") is not None:
                line += f", ETA {execution['batch_eta_seconds']:.0f} s"
            if execution.get("stalled_seconds") is not None:
                line += f", [red]stalled for {execution['stalled_seconds']} s[/]"
        out.print(line)
        if execution.get("stop_reason"):
            out.print(f"[yellow]stopped:[/] {escape(execution['stop_reason'])}")
        steps = execution.get("next_steps") or []
        if steps:
            out.print("[bold]Next:[/] " + escape(_said(steps, execution["kind"])), soft_wrap=True)  # whole commands
    for r in doc["offline"][:20]:
        out.print(f"[red]offline:[/] {escape(offline_line(r))}", soft_wrap=True)
    if len(doc["offline"]) > 20:
        out.print(f"[red]offline:[/] and {len(doc['offline']) - 20} more (kops status --format json lists all)")
    table = console.table(f"Reassignments in flight ({len(doc['in_flight'])})", "Partition", "Replicas", "Adding",
                          "Removing", "Started by", ">Lag")
    for r in doc["in_flight"]:
        table.add_row(f"{r['topic']}-{r['partition']}", ",".join(map(str, r["replicas"])),
                      ",".join(map(str, r["adding"])),
                      ",".join(map(str, r["removing"])), r["started_by"],
                      format_size(r["lag_bytes"]) if "lag_bytes" in r else "")
    out.print(table if doc["in_flight"] else "No reassignment in flight.")
    throttles = console.table("Throttles in force", "Entity", "Key", "Value", "Set by")
    for t in doc["throttles"]:
        throttles.add_row(t["entity"], t["key"], t["value"], t["set_by"])
    out.print(throttles if doc["throttles"] else "No throttles in force.")


def _said(steps: list[str], kind: str) -> str:
    if kind == "rollback":
        return f"`{steps[0]}` finishes the rollback"
    return f"`{steps[0]}` continues it, or `{steps[1]}` undoes what it did"


@connection_options
def status(
    connection: Connection,
    fleet: FleetArg = None,
    inventory: Inventory = None,
    limit: Limit = None,
    watch: Annotated[bool, typer.Option("--watch", "-w", help="Refresh every few seconds until Ctrl-C.")] = False,
    interval: Annotated[float,
                        typer.Option("--interval", help="Seconds between refreshes with --watch.", min=0.2)] = 2.0,
    output_format: Format = OutputFormat.text,
) -> None:
    """Show the running (or last) kops execution with its batch, progress and ETA, every reassignment in flight
    on the cluster whoever started it (with lag in bytes where the cluster reports it), and the replication
    throttles in force with who set them.

    Examples:

    \b
      kops status -b broker1:9092 --watch
      kops status -z zk1:2181/kafka
      kops status -i inventories/example -l prod-eu --watch
      kops status -b broker1:9092 --format json | jq '.in_flight | length'
      kops status plans/prod -i inventories/example   # a fleet: a row a cluster
      kops status -i inventories/example -l prod

    Exit codes: 0; 1 the cluster (over a fleet: any cluster) could not be read.
    """
    targets = fleet_targets(connection, fleet, inventory, limit)
    if targets is not None:
        raise typer.Exit(status_fleet(targets, _collect, output_format, (watch, interval)))
    with open_cluster(connection, resolve(connection, inventory, limit)) as cluster:
        repeat(lambda: console.print_json(_collect(cluster)) if output_format is OutputFormat.json
               else _render(_collect(cluster)), output_format, (watch, interval))


@connection_options
def cancel(
    connection: Connection,
    fleet: FleetArg = None,
    inventory: Inventory = None,
    limit: Limit = None,
    now: Annotated[bool,
                   typer.Option("--now",
                                help="Also cancel the batch in flight (KIP-455 through the Admin API; KIP-236 where a "
                                     "ZooKeeper cluster offers it).")] = False,
) -> None:
    """Ask the running kops execution to stop at its next checkpoint (it exits 3 and can be resumed). With --now
    it also cancels the batch in flight. With no kops execution running, --now cancels whatever reassignment is
    in flight (through the Admin API, or where a ZooKeeper cluster advertises KIP-236).

    Examples:

    \b
      kops cancel -b broker1:9092
      kops cancel -b broker1:9092 --now
      kops cancel -z zk1:2181/kafka --now
      kops cancel plans/prod -i inventories/example   # a fleet: each cluster

    Over a fleet's folder it also leaves DIR/fleet.cancel, so the `kops apply DIR` running starts no further
    cluster; -i/-l selecting several clusters asks each of them. Exit codes: 0; 1 a cluster (over a fleet: any)
    could not be asked, or --now cannot cancel there.
    """
    targets = fleet_targets(connection, fleet, inventory, limit)
    if targets is not None:
        raise typer.Exit(cancel_fleet(targets, lambda cluster: _cancel(cluster, now), fleet))
    with open_cluster(connection, resolve(connection, inventory, limit)) as cluster:
        console.info(_cancel(cluster, now))


def _cancel(cluster: Cluster, now: bool) -> str:
    """Ask the execution running to stop (and with `now`, cancel what is in flight); what was done, one line."""
    holder = cluster.holder()
    snapshot = cluster.snapshot()
    if holder and holder.get("execution"):
        Journal(cluster.records()).request_cancel(holder["execution"], now,
                                                  holder_info("kops cancel", None, time.time()))
        return (f"asked execution {holder['execution']} ({describe(holder)}) to stop at its next checkpoint"
                + (_cancel_now_note(cluster, snapshot) if now else ""))
    moving = snapshot.in_flight()
    if not now or not moving:
        # an execution through the other transport (-z, -b) holds its own lock: this one does not see it
        return "no kops execution is running" + (" and nothing is in flight" if not moving else
                                                 f" here, but {len(moving)} partition(s) are moving: an execution "
                                                 "through the other transport (-z or -b) is cancelled there; "
                                                 "--now cancels the reassignment itself")
    can = cluster.capabilities(snapshot)
    if not can.cancel_in_flight:
        raise KopsError(f"this cluster cannot cancel a reassignment {can.no_cancel}",
                        hint="reach it through the Admin API: kops cancel --now -b BOOTSTRAP_SERVERS")
    cluster.cancel([TopicPartition(m.topic, m.partition) for m in moving], 60.0)
    return f"cancelled the reassignment of {len(moving)} partition(s) in flight ({can.cancel_by})"


def _cancel_now_note(cluster: Cluster, snapshot: Snapshot) -> str:
    """What --now can do here: real Kafka 2.4+ ignores a deleted reassignment znode, so through ZooKeeper only
    KIP-236 cancels; through the Admin API, KIP-455 always does."""
    can = cluster.capabilities(snapshot)
    if can.cancel_in_flight:
        return f" and to cancel the batch in flight ({can.cancel_by})"
    return (f"; this cluster cannot cancel a batch in flight {can.no_cancel}, so kops stops waiting for it and it "
            f"finishes on its own (kafka-reassign-partitions.sh --cancel can revert it)")
