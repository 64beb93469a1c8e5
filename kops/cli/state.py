"""`kops state`: read a whole cluster and show it, or save it as a kops-snapshot/1 file."""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from kops.cli import console
from kops.cli.connection import Address, Connection, connection_options, open_cluster, resolve
from kops.cli.options import Format, Inventory, Limit, OutputFormat
from kops.cluster.port import Cluster
from kops.errors import UsageError
from kops.model import snapshot_format
from kops.model.capacity import disk_warnings, volumes
from kops.model.capacity import resolve as resolve_capacity
from kops.model.partitions import TopicPartition
from kops.model.snapshot import ADMIN_API, InFlight, Snapshot
from kops.model.throttle_keys import ALL_KEYS as THROTTLE_KEYS
from kops.units import format_size

ADMIN_API_MOVE = "Admin API (KIP-455)"  # a reassignment ListPartitionReassignments lists


def _umask() -> int:
    """The process's umask (read by setting it, then set back: the CLI runs one thread)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomically(path: Path, data: bytes) -> None:
    """Write via a temporary file and rename, so a reader never sees half a file. A file that cannot be written
    is one clear line (exit 1), not a traceback."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise UsageError(f"cannot write: {exc.strerror}", where=str(path), hint="choose another path") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o666 & ~_umask())  # as `> FILE` would make it: mkstemp makes it 0600
            handle.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise UsageError(f"cannot write: {exc.strerror}", where=str(path), hint="choose another path") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def take_snapshot(connection: Connection, address: Address, offers: dict[str, str] | None = None,
                  sizes: dict[TopicPartition, int] | None = None, quiet: bool = False) -> Snapshot:
    """The whole cluster through the address's transport, with its brokers' log dirs (their disks' size), with a
    spinner saying what it waits for (none when `quiet`: a fleet reads several clusters at once, and a terminal
    shows one spinner); `offers` is filled with what the cluster lets kops do (ApiVersions, features) and `sizes`
    with the partition sizes the transport can read (DescribeLogDirs), when given. Through the Admin API, which
    dir holds each replica of the brokers with several log dirs too (docs/design/jbod.md §2)."""
    what = "reading the cluster through the Admin API" if address.transport == "admin" else "connecting to ZooKeeper"
    spinner = _Silent() if quiet else console.err.status(what, spinner="dots")
    with spinner as status, open_cluster(connection, address) as cluster:
        if offers is not None:
            offers.update(cluster.offers())
        if sizes is not None:
            sizes.update(cluster.sizes())
        snap = cluster.snapshot(progress=status.update)
        status.update("reading the brokers' log dirs")
        return with_log_dirs(cluster, snap)


def with_log_dirs(cluster: Cluster, snap: Snapshot) -> Snapshot:
    """`snap` with each broker's log dirs (total and usable bytes: reported capacity) and, through the Admin API,
    which dir holds each replica of the brokers with several (no znode says so)."""
    dirs = cluster.log_dirs()
    if not cluster.capabilities(snap).replica_dirs:  # ZooKeeper: no znode says which dir holds a replica
        return replace(snap, log_dirs=dirs)
    return replace(snap, log_dirs=dirs, replica_dirs=cluster.replica_dirs(dirs), replica_dirs_read=True)


class _Silent:
    """A spinner that shows nothing (take_snapshot's `quiet`)."""

    def __enter__(self) -> _Silent:
        return self

    def __exit__(self, *_exc: object) -> None:
        return None

    def update(self, _message: str) -> None:
        return None


@connection_options
def state(
    connection: Connection,
    output_format: Format = OutputFormat.text,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Save the snapshot (kops-snapshot/1 JSON) to this file.")
    ] = None,
    inventory: Inventory = None,
    limit: Limit = None,
    out_dir: Annotated[Path | None, typer.Option(
        "--out-dir", help="Read every cluster -i/-l select (a fleet) and save each as DIR/CLUSTER.json.")] = None,
    forks: Annotated[int, typer.Option("--forks", help="Clusters read at once (a fleet).", min=1)] = 5,
) -> None:
    """Read a cluster's whole layout: brokers, racks, topics, leaders, ISR, configs, throttles, reassignments.

    Through ZooKeeper (-z, Kafka 2.4 - 3.9 in ZooKeeper mode) or Kafka's Admin API (-b, any broker 2.4+,
    KRaft, Kafka 4). The snapshot can be saved with --out and used for offline planning
    (kops plan --snapshot FILE), e.g. in CI runners that cannot reach the cluster.

    Examples:

    \b
      kops state -b broker1:9092
      kops state -b broker1:9092 --out snapshots/prod.json
      kops state -b broker1:9092 --format json | jq '.summary'
      kops state -z zk1:2181/kafka                 # ZooKeeper mode
      kops state -b broker1:9092 --command-config client.properties \\
          --out snapshots/prod.json
      kops state -i inventories/example -l prod --out-dir snapshots/prod

    Exit codes: 0 read, 1 error (over a fleet: any cluster not read, each named).
    """
    if out_dir is not None:
        from kops.cli.fleet import state_fleet  # noqa: PLC0415 - a fleet only

        if out is not None:
            raise UsageError("give --out (one cluster) or --out-dir (a fleet), not both")
        raise typer.Exit(state_fleet(connection, inventory, limit, (out_dir, forks, output_format),
                                     lambda c, a: take_snapshot(c, a, quiet=True), write_atomically))
    offers: dict[str, str] = {}
    snapshot = take_snapshot(connection, resolve(connection, inventory, limit), offers)
    if out is not None:
        write_atomically(out, snapshot_format.dumps(snapshot))
        console.info(f"wrote snapshot of {snapshot.partition_count} partitions to {out}")
    if output_format is OutputFormat.json:
        console.print_json(snapshot_format.to_document(snapshot))
    elif out is None:
        render(snapshot)
        console.out.print("[bold]Cluster offers:[/] " + "; ".join(f"{k} {v}" for k, v in offers.items()),
                          highlight=False)
    report_problems(snapshot)


def report_problems(snapshot: Snapshot) -> None:
    if snapshot.migration:
        console.warning("a ZooKeeper-to-KRaft migration is in progress: kops will not write to this cluster")
    if snapshot.fenced:
        console.warning(f"fenced broker(s) {_ids(snapshot.fenced)}: registered but not serving (not live)")
    for line in disk_warnings(resolve_capacity(None, snapshot), snapshot.log_dirs):
        console.warning(line)
    for problem in snapshot.problems:
        console.warning(f"{problem.path}: {problem.message}")
    if snapshot.problems:
        console.warning(f"snapshot incomplete: {snapshot.incompleteness}")


AllowIncomplete = Annotated[bool, typer.Option(
    "--allow-incomplete", help="Go on with a snapshot marked incomplete (brokers' views still disagreeing, or a "
                               "znode Kafka would misread); refused otherwise (exit 3).")]


def refuse_incomplete(snapshot: Snapshot, allowed: bool) -> None:
    """Refused (exit 3) unless `allowed`: then said, and gone on with."""
    if not allowed:
        snapshot.refuse_incomplete()
    elif snapshot.incompleteness is not None:
        console.warning(f"going on with an incomplete snapshot (--allow-incomplete): {snapshot.incompleteness}")


def render(snapshot: Snapshot) -> None:
    """The cluster as tables: brokers, topics, reassignments in flight, throttles, then what needs attention."""
    out = console.out
    out.print(
        f"[bold]Cluster[/] {snapshot.cluster_id or '?'}  ·  {snapshot.connect or ''}  ·  "
        f"controller {controller_label(snapshot)}  ·  "
        f"{len(snapshot.brokers)} brokers{f' (+{len(snapshot.fenced)} fenced)' if snapshot.fenced else ''}, "
        f"{len(snapshot.topics)} topics, {snapshot.partition_count} partitions"
    )
    out.print(_brokers_table(snapshot))
    out.print(_topics_table(snapshot))
    in_flight = snapshot.in_flight()
    if in_flight:
        moves = console.table("Reassignments in flight", "Partition", "Replicas", "Adding", "Removing", "Target",
                              "Source")
        for f in in_flight:
            source = move_source(f, snapshot.connect)
            moves.add_row(f"{f.topic}-{f.partition}", _ids(f.replicas), _ids(f.adding), _ids(f.removing),
                          _ids(f.target or ()), source)
        out.print(moves)
    throttles = _throttles_table(snapshot)
    if throttles.row_count:
        out.print(throttles)
    if snapshot.log_dirs:
        out.print(_log_dirs_table(snapshot))
    if snapshot.dir_moves():
        out.print(_dir_moves_table(snapshot))
    if not snapshot.replica_dirs_read and any(len(snapshot.broker_dirs(b.id)) != 1 for b in snapshot.brokers):
        out.print("[dim]Replica log dirs: not read through ZooKeeper (no znode says which dir holds a replica; "
                  "kops state -b reads them through the Admin API)[/]")
    if snapshot.pending_deletions:
        out.print(f"[dim]Pending deletions:[/] {', '.join(snapshot.pending_deletions)}")
    if snapshot.preferred_election:
        out.print(f"[dim]Preferred election pending:[/] {', '.join(str(tp) for tp in snapshot.preferred_election)}")
    held = {r for t in snapshot.topics.values() for p in t.partitions.values() for r in p.replicas}
    if snapshot.fenced:
        out.print(f"[yellow]Fenced brokers (registered, not serving):[/] {_ids(snapshot.fenced)}")
    dead = sorted(held - snapshot.live_broker_ids - set(snapshot.fenced))
    if dead:
        out.print(f"[yellow]Replicas on brokers that are not registered:[/] {', '.join(map(str, dead))}")


def move_source(move: InFlight, connect: str | None) -> str:
    """Where a reassignment in flight was read. Through the Admin API (a snapshot named kafka://SERVERS) every one
    is what ListPartitionReassignments lists (KIP-455; a KRaft cluster has no znode); through ZooKeeper, the
    reassignment znode `/admin/reassign_partitions`, the topic znode's adding/removing replicas (a move made
    through the Admin API), or both."""
    if (connect or "").startswith(ADMIN_API):
        return ADMIN_API_MOVE
    if move.requested:
        return "znode + topic" if move.replicas else "znode"
    return "topic (API)"


def controller_label(snapshot: Snapshot) -> str:
    """The controller as the snapshot knows it, its epoch only where known. A KRaft cluster (its finalized
    metadata.version says so) is led by its metadata quorum's leader, a controller node that need not be a broker;
    where the quorum was not described to kops, that is said rather than "none"."""
    ctl = snapshot.controller
    kraft = snapshot.metadata_version is not None
    if ctl.id is None:
        return "KRaft quorum (leader not reported through the Admin API)" if kraft else "[red]none[/]"
    epoch = f"epoch {ctl.epoch}" if ctl.epoch is not None else ""
    if kraft:
        return f"node {ctl.id} (KRaft quorum leader{', ' + epoch if epoch else ''})"
    return f"broker {ctl.id}" + (f" ({epoch})" if epoch else "")


def _brokers_table(snapshot: Snapshot) -> Table:
    brokers = console.table("Brokers", ">ID", "Rack", "Endpoints", "Features", ">Leaders", ">Replicas", ">Reg.")
    leaders: dict[int, int] = {}
    replicas: dict[int, int] = {}
    for topic in snapshot.topics.values():
        for part in topic.partitions.values():
            leaders[part.leader] = leaders.get(part.leader, 0) + 1
            for r in part.replicas:
                replicas[r] = replicas.get(r, 0) + 1
    for b in snapshot.brokers:
        features = ", ".join(f"{n} {f.min_version}-{f.max_version}" for n, f in sorted(b.features.items())) or "-"
        brokers.add_row(str(b.id), b.rack or "-", " ".join(b.endpoints), features,
                        str(leaders.get(b.id, 0)), str(replicas.get(b.id, 0)), f"v{b.version}")
    return brokers


def _log_dirs_table(snapshot: Snapshot) -> Table:
    """Each broker's log dirs as DescribeLogDirs reports them, with how many replicas each holds ("?" where kops
    cannot tell: several dirs read through ZooKeeper); dirs found on one filesystem say so, an offline dir too."""
    table = console.table("Log dirs", ">Broker", "Dir", ">Total", ">Usable", ">Replicas", "Volume", "Error")
    shared = {(v.broker, p): v.paths for v in volumes(snapshot.log_dirs) if len(v.paths) > 1 for p in v.paths}
    held = _replicas_per_dir(snapshot)
    for d in snapshot.log_dirs:
        group = shared.get((d.broker, d.path))
        count = str(held.get((d.broker, d.path), 0)) if snapshot.placement_known(d.broker) else "?"
        table.add_row(str(d.broker), d.path, "-" if d.total_bytes is None else format_size(d.total_bytes),
                      "-" if d.usable_bytes is None else format_size(d.usable_bytes), count,
                      " + ".join(group) + ": one volume" if group else "-",
                      f"[red]offline: {d.error}[/]" if d.error else "-")
    return table


def _replicas_per_dir(snapshot: Snapshot) -> dict[tuple[int, str], int]:
    """(broker, dir) -> replicas in it: a broker's only dir holds all it hosts, several are counted as read."""
    out: dict[tuple[int, str], int] = {}
    for topic in snapshot.topics.values():
        for part in topic.partitions.values():
            for broker in part.replicas:
                dirs = snapshot.broker_dirs(broker)
                if len(dirs) == 1:
                    out[(broker, dirs[0])] = out.get((broker, dirs[0]), 0) + 1
    for r in snapshot.replica_dirs:
        if not r.future:
            out[(r.broker, r.path)] = out.get((r.broker, r.path), 0) + 1
    return out


def _dir_moves_table(snapshot: Snapshot) -> Table:
    """Intra-broker moves in flight (future replicas, KIP-113), by any tool: from which dir to which."""
    table = console.table("Log-dir moves in flight", "Partition", ">Broker", "From", "To")
    for r in snapshot.dir_moves():
        tp = TopicPartition(r.topic, r.partition)
        table.add_row(str(tp), str(r.broker), snapshot.dir_of(tp, r.broker) or "?", r.path)
    return table


def _topics_table(snapshot: Snapshot) -> Table:
    under = {(tp.topic, tp.partition) for tp in snapshot.under_replicated()}
    offline = {(tp.topic, tp.partition) for tp in snapshot.offline()}
    topics = console.table("Topics", "Topic", ">Partitions", ">RF", ">Under-replicated", ">Offline", ">Reassigning",
                           "Config")
    for name, topic in sorted(snapshot.topics.items()):
        n_under = sum(1 for p in topic.partitions if (name, p) in under)
        n_off = sum(1 for p in topic.partitions if (name, p) in offline)
        moving = sum(1 for p in topic.partitions.values() if p.reassigning)
        overrides = ", ".join(f"{k}={v}" for k, v in sorted(topic.config.items()) if k not in THROTTLE_KEYS)
        label = name + (" [dim](deleting)[/]" if name in snapshot.pending_deletions else "")
        topics.add_row(label, str(len(topic.partitions)), str(topic.replication_factor),
                       f"[yellow]{n_under}[/]" if n_under else "0", f"[bold red]{n_off}[/]" if n_off else "0",
                       f"[cyan]{moving}[/]" if moving else "0", overrides or "-")
    return topics


def _throttles_table(snapshot: Snapshot) -> Table:
    throttles = console.table("Throttles", "Entity", "Key", "Value")
    for name, topic in sorted(snapshot.topics.items()):
        for key in THROTTLE_KEYS:
            if key in topic.config:
                throttles.add_row(f"topic {name}", key, topic.config[key] or '""')
    grouped: dict[tuple[str, str], list[str]] = {}  # same key and rate on many brokers: one row
    for entity, config in sorted(snapshot.broker_configs.items(),
                                 key=lambda kv: (not kv[0].isdigit(), kv[0].zfill(10))):
        for key in THROTTLE_KEYS:
            if key in config:
                grouped.setdefault((key, config[key]), []).append(entity)
    for (key, value), entities in grouped.items():
        label = "broker" if len(entities) == 1 else "brokers"
        throttles.add_row(f"{label} {','.join(entities)}", key, value)
    return throttles


def _ids(values: tuple[int, ...]) -> str:
    return ",".join(map(str, values)) if values else "-"
