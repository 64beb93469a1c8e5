"""Placing replicas in log dirs (JBOD, KIP-113): a plan's moves gain their `to_dirs`, and the replicas that stay
on their broker but change dir become disk moves, run in a batch of their own after the others.

What `kops plan --import-kafka` does with a kafka-reassign-partitions file whose `log_dirs` name paths
(docs/design/jbod.md §4): for each (broker, path) an entry places,
- a broker the move adds: the path goes into the move's `to_dirs` (the new replica is born there);
- a broker that already holds the replica: a `DiskMove` from the dir it is in now (nothing if it is there);
and every path must be one of that broker's log dirs, where the snapshot read them. Worked example: `t-0` on
[1, 2], broker 1's replica in /d1; the file says replicas [1, 3], log_dirs ["/d2", "/d1"]: the move [1, 2] ->
[1, 3] gets to_dirs [None, "/d1"] and broker 1's replica a disk move /d1 -> /d2.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from kops.errors import DocumentError
from kops.model.partitions import TopicPartition
from kops.model.plan import ALTER_LOG_DIRS_RATE, Batch, DiskMove, Estimate, Move, Plan, Throttle
from kops.model.snapshot import Snapshot

Placed = Mapping[TopicPartition, Sequence[tuple[int, str]]]


JBOD_KRAFT = 17  # the metadata.version feature level of 3.7-IV2 (Kafka's MetadataVersion): JBOD on KRaft from it


def jbod_refusal(snapshot: Snapshot) -> str | None:
    """Why the cluster takes no disk move and places no replica in a dir, or None: on KRaft, JBOD needs the
    finalized metadata.version 3.7-IV2 or later (a broker's software is not enough: the cluster's metadata
    must be upgraded). ZooKeeper mode always had JBOD; a snapshot that did not read the version is not refused."""
    level = snapshot.metadata_version
    if level is None or level >= JBOD_KRAFT:
        return None
    return (f"log dirs on KRaft (JBOD) need metadata.version 3.7-IV2 (feature level {JBOD_KRAFT}) or later: this "
            f"cluster's finalized metadata.version is level {level}; upgrade it (kafka-features upgrade "
            f"--metadata 3.7) before moving replicas between log dirs")


def place(plan: Plan, snapshot: Snapshot, placed: Placed, sizes: Mapping[TopicPartition, int],
          throttle: int | None, speed: float, where: str, reason: str) -> Plan:
    """`plan` with its moves' target dirs and the disk moves `placed` asks for (see the module); `throttle` is
    the alter-log-dirs rate set on the brokers (None: unthrottled), `speed` the bytes/s the estimate counts with.
    Raises DocumentError (at `where`) for a dir the broker does not have or a placement kops cannot know."""
    refused = jbod_refusal(snapshot) if placed else None
    if refused is not None:
        raise DocumentError(refused, where=where)
    moves = {m.tp: m for m in plan.moves}
    to_dirs: dict[TopicPartition, dict[int, str]] = {}
    disk: list[DiskMove] = []
    for tp, pairs in sorted(placed.items()):
        partition = snapshot.partition(tp)
        current = partition.replicas if partition is not None else ()
        for broker, path in pairs:
            _known_dir(snapshot, tp, broker, path, where)
            if broker not in current:
                to_dirs.setdefault(tp, {})[broker] = path
                continue
            now = _dir_now(snapshot, tp, broker, where)
            if now != path:
                replicas = moves[tp].to_replicas if tp in moves else current
                disk.append(DiskMove(tp.topic, tp.partition, broker, now, path, replicas, sizes.get(tp, 0), reason))
    batches = tuple(_placed_batch(b, moves, to_dirs) for b in plan.batches)
    return with_disk_moves(dataclasses.replace(plan, batches=batches), snapshot, disk, throttle, speed)


def with_disk_moves(plan: Plan, snapshot: Snapshot, disk: Sequence[DiskMove], throttle: int | None,
                    speed: float) -> Plan:
    """`plan` with `disk` in a last batch of their own (the alter-log-dirs throttle on their brokers), undone
    first by the rollback, counted by the summary and named in a warning; `plan` itself when there are none.
    The planner's log-dir steps (kops/planner/log_dirs.py) end here too, as the import does."""
    if not disk:
        return plan
    batches = plan.batches
    forward = _disk_batch(len(batches) + 1, tuple(disk), snapshot, throttle, speed)
    backward = _disk_batch(1, tuple(m.inverse() for m in disk), snapshot, throttle, speed)
    rollback = dataclasses.replace(plan.rollback, batches=(backward, *(
        dataclasses.replace(b, index=b.index + 1) for b in plan.rollback.batches)))
    seconds = plan.summary.estimated_seconds
    if forward.estimate.seconds is not None:
        seconds = (seconds or 0.0) + forward.estimate.seconds
    summary = dataclasses.replace(plan.summary, disk_moves=len(disk), disk_bytes=forward.disk_bytes,
                                  estimated_seconds=seconds)
    brokers = sorted({m.broker for m in disk})
    said = (f"{len(disk)} replica(s) move to another log dir of their broker (disk moves, batch {forward.index}) "
            f"on broker(s) {', '.join(map(str, brokers))}")
    return dataclasses.replace(plan, batches=(*batches, forward), rollback=rollback, summary=summary,
                               warnings=(*plan.warnings, said))


def _known_dir(snapshot: Snapshot, tp: TopicPartition, broker: int, path: str, where: str) -> None:
    dirs = snapshot.broker_dirs(broker)
    if dirs and path not in dirs:
        raise DocumentError(f"{tp} names log dir {path} on broker {broker}, which has {', '.join(dirs)}",
                            where=where, hint="`kops state -b` lists each broker's log dirs")


def _dir_now(snapshot: Snapshot, tp: TopicPartition, broker: int, where: str) -> str:
    """The dir broker's replica of `tp` is in; refused where kops cannot know it (no DescribeLogDirs read)."""
    now = snapshot.dir_of(tp, broker)
    if now is None:
        raise DocumentError(f"{tp} is placed in a log dir on broker {broker}, but which dir holds it now is not "
                            f"known (log dirs are read through the Admin API only)",
                            where=where, hint="plan it with -b BOOTSTRAP")
    return now


def _placed_batch(batch: Batch, moves: Mapping[TopicPartition, Move],
                  to_dirs: Mapping[TopicPartition, Mapping[int, str]]) -> Batch:
    placed = tuple(
        dataclasses.replace(m, to_dirs=tuple(to_dirs[m.tp].get(b) for b in m.to_replicas)) if m.tp in to_dirs else m
        for m in batch.moves)
    return dataclasses.replace(batch, moves=placed)


def _disk_batch(index: int, disk: tuple[DiskMove, ...], snapshot: Snapshot, throttle: int | None,
                speed: float) -> Batch:
    """A batch of disk moves alone: the alter-log-dirs throttle on their brokers (a lower rate found is kept),
    and an estimate from the busiest broker's bytes (each broker copies between its own dirs at once)."""
    per_broker: dict[int, int] = {}
    for m in disk:
        per_broker[m.broker] = per_broker.get(m.broker, 0) + m.bytes
    rates: dict[int, dict[str, str]] = {}
    if throttle is not None:
        for broker in sorted(per_broker):
            found = snapshot.broker_configs.get(str(broker), {}).get(ALTER_LOG_DIRS_RATE)
            rates[broker] = {ALTER_LOG_DIRS_RATE: str(_lower(found, throttle))}
    rate = min(speed, throttle) if throttle else speed
    sized = any(m.bytes for m in disk)
    seconds = max(per_broker.values()) / rate if sized and rate > 0 else None
    return Batch(index, (), Throttle({}, rates, throttle), Estimate(seconds), tuple(sorted(disk)))


def _lower(found: str | None, ours: int) -> int:
    try:
        return min(int(found), ours) if found is not None else ours
    except ValueError:
        return ours
