"""The planner's log dirs (JBOD, docs/design/jbod.md §5): which dir of its broker each replica ends in.

Three things a plan may ask of a broker's dirs, all decided here on `Dirs`, one broker's dirs as the plan fills
them (bytes of replicas per dir, and per volume the room left under the disk limit):
- `brokers: {remove_log_dirs: {3: [/data/d2]}}`: every replica in /data/d2 goes to broker 3's other dirs with
  room, largest first, each to the dir with the most room; what fits nowhere leaves the broker (`spill`, before
  the plan's balancing steps, so the other brokers take it as a decommission's replicas);
- a replica a move adds on a broker with several dirs is born in the dir with the most room (`to_dirs`), never a
  dir being removed, an offline or a cordoned one (only in plans that place replicas in dirs at all);
- the goal `disk_within_broker` (kops/planner/intra_broker.py) evens each broker's dirs.
`place_dirs` runs once the plan's replicas are final: departures leave their dirs, the removed dirs' replicas get
their disk moves, arrivals their dirs, then the goal; the disk moves join the plan in a last batch
(kops/model/dir_moves.py `with_disk_moves`, as an import's do).

Capacity per dir: kops/planner/dirs.py.

Worked example: broker 3 has /d1 (10 GiB, 7 GiB of replicas) and /d2 (10 GiB, 2 GiB), limit 0.8; removing /d2
sends its replicas, 1.5 GiB and 0.5 GiB, to /d1 while they fit under 8 GiB: the 0.5 GiB one fits, the 1.5 GiB
one does not and leaves broker 3 for the least loaded broker that keeps the partition's racks distinct.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from kops.model.capacity import DEFAULT_LIMIT, Resource
from kops.model.dir_moves import jbod_refusal, with_disk_moves
from kops.model.partitions import TopicPartition
from kops.model.plan import DiskMove, Plan
from kops.model.snapshot import Snapshot
from kops.planner.dirs import Dirs, broker_dirs
from kops.planner.intra_broker import even_dirs


def disk_limit(limits: Mapping[Resource, float] | None) -> float:
    """The fraction of each dir's volume a plan may fill: the capacity's disk limit (0.8 by default)."""
    return (limits or {}).get("disk", DEFAULT_LIMIT)


@dataclass(frozen=True)
class Removal:
    """What `remove_log_dirs` asks of one broker, checked against the cluster."""

    broker: int
    paths: tuple[str, ...]
    dirs: Dirs


def removals(snapshot: Snapshot, asked: Mapping[int, tuple[str, ...]], decommissioned: Iterable[int],
             sizes: Mapping[TopicPartition, int], limit: float) -> tuple[list[Removal], list[str]]:
    """The brokers' removals, and one line per request the cluster cannot take: a broker not registered or being
    decommissioned, a dir the broker does not have, every dir of a broker, a placement kops cannot know."""
    out: list[Removal] = []
    problems: list[str] = []
    for broker, paths in sorted(asked.items()):
        have = snapshot.broker_dirs(broker)
        if broker not in snapshot.live_broker_ids:
            problems.append(f"brokers.remove_log_dirs names broker {broker}, which is not registered")
        elif broker in set(decommissioned):
            problems.append(f"brokers.remove_log_dirs names broker {broker}, which is decommissioned: every dir "
                            f"of it empties with it")
        elif not have:
            problems.append(f"brokers.remove_log_dirs: the log dirs of broker {broker} were not read (through the "
                            f"Admin API only): plan with -b BOOTSTRAP")
        elif unknown := [p for p in paths if p not in have]:
            problems.append(f"brokers.remove_log_dirs: broker {broker} has no log dir {', '.join(unknown)} (it has "
                            f"{', '.join(have)})")
        elif set(have) <= set(paths):
            problems.append(f"brokers.remove_log_dirs names every log dir of broker {broker}: decommission it "
                            f"instead (brokers.decommission)")
        elif (dirs := broker_dirs(snapshot, broker, sizes, limit, paths)) is None:
            problems.append(f"brokers.remove_log_dirs: which replicas are in {', '.join(paths)} of broker {broker} "
                            f"is not known (replicas' log dirs are read through the Admin API only): plan with "
                            f"-b BOOTSTRAP")
        else:
            out.append(Removal(broker, paths, dirs))
    return out, problems


def drained(removal: Removal, sizes: Mapping[TopicPartition, int],
            keep: Iterable[TopicPartition] | None = None) -> tuple[list[tuple[TopicPartition, str, str]],
                                                                   list[TopicPartition]]:
    """The removed dirs' replicas (of `keep`, when given: those still on the broker), largest first: (tp, from,
    to) for each that fits in another dir of the broker, and the ones that fit nowhere. Fills `removal.dirs`."""
    dirs, wanted = removal.dirs, None if keep is None else set(keep)
    leaving = sorted((tp for tp, path in dirs.where.items() if path in removal.paths
                      and (wanted is None or tp in wanted)), key=lambda tp: (-sizes.get(tp, 0), tp))
    fits: list[tuple[TopicPartition, str, str]] = []
    spill: list[TopicPartition] = []
    for tp in leaving:
        size = float(sizes.get(tp, 0))
        target = dirs.best(size)
        if target is None:
            spill.append(tp)
            continue
        fits.append((tp, dirs.where[tp], target))
        dirs.put(tp, target, size)
    return fits, spill


def place_dirs(plan: Plan, snapshot: Snapshot, sizes: Mapping[TopicPartition, int], asked: Mapping[int, tuple[str,
               ...]], limits: Mapping[Resource, float] | None, within: float | None, rate: tuple[int | None, float]
               ) -> tuple[Plan, list[str]]:
    """`plan` (its replicas final) with its replicas' dirs: the removed dirs emptied by disk moves, each replica a
    move adds born in the dir with the most room, and, with `within` (the goal's band, not None), each broker's
    dirs evened (intra_broker.py). `rate`: the alter-log-dirs throttle and the bytes/s the estimate counts with.
    Returns the plan and the lines of what could not be done (a removed dir's replica that fits nowhere now, a
    KRaft cluster whose metadata.version has no JBOD)."""
    limit = disk_limit(limits)
    after = {m.tp: m.to_replicas for m in plan.moves}
    found, problems = removals(snapshot, asked, (), sizes, limit)
    removed = {r.broker: r for r in found}
    jbod = [b.id for b in snapshot.brokers if len(snapshot.broker_dirs(b.id)) > 1]
    every = {b: removed[b].dirs if b in removed else broker_dirs(snapshot, b, sizes, limit) for b in jbod}
    for tp, replicas in after.items():  # departures leave their dirs
        for dirs in every.values():
            if dirs is not None and tp in dirs.where and dirs.broker not in replicas:
                dirs.leave(tp, float(sizes.get(tp, 0)))
    disk: list[DiskMove] = []
    for broker, removal in sorted(removed.items()):
        fits, spill = drained(removal, sizes, [tp for tp in removal.dirs.where if broker in after.get(tp, (broker,))])
        problems += [f"{tp}: its replica in {removal.dirs.where[tp]} of broker {broker} fits in no other dir of it "
                     f"now" for tp in spill]
        disk += [DiskMove(tp.topic, tp.partition, broker, src, dst, after.get(tp) or _replicas(snapshot, tp),
                          sizes.get(tp, 0), f"remove log dir {src} of broker {broker}") for tp, src, dst in fits]
    plan = _arrivals(plan, {b: d for b, d in every.items() if d is not None}, sizes)
    if within is not None:
        disk += even_dirs({b: d for b, d in every.items() if d is not None and b not in removed}, snapshot, after,
                          sizes, within)
    placed = with_disk_moves(plan, snapshot, sorted(disk), rate[0], rate[1])
    refused = jbod_refusal(snapshot) if placed.disk_moves or any(m.to_dirs for m in placed.moves) else None
    return placed, problems + ([refused] if refused else [])


def _replicas(snapshot: Snapshot, tp: TopicPartition) -> tuple[int, ...]:
    part = snapshot.partition(tp)
    return part.replicas if part is not None else ()


def _arrivals(plan: Plan, every: Mapping[int, Dirs], sizes: Mapping[TopicPartition, int]) -> Plan:
    """Each replica a move adds on a broker of `every` gets the dir with the most room after the arrivals before it
    (the plan's order); where none fits, the one with the most room left (the broker-level check let it in)."""
    batches = []
    for batch in plan.batches:
        moves = []
        for move in batch.moves:
            chosen: list[str | None] = []
            for broker in move.to_replicas:
                dirs = every.get(broker) if broker in move.adding else None
                size = float(sizes.get(move.tp, 0))
                path = None if dirs is None else dirs.best(size) or dirs.best(-math.inf)
                if dirs is not None and path is not None:
                    dirs.put(move.tp, path, size)
                chosen.append(path)
            moves.append(replace(move, to_dirs=tuple(chosen)) if any(chosen) else move)
        batches.append(replace(batch, moves=tuple(moves)))
    return replace(plan, batches=tuple(batches))
