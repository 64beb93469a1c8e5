"""Replicas into named log dirs during an execution (JBOD, KIP-113; docs/design/jbod.md §6): the new replicas
a move places (`Move.to_dirs`) and disk moves (a replica to another dir of its broker), through the port's
AlterReplicaLogDirs, as Kafka's kafka-reassign-partitions does.

For a batch, in order:
1. before its reassignment is submitted, AlterReplicaLogDirs for each new replica a move places: its broker
   does not host it yet and answers REPLICA_NOT_AVAILABLE, keeping the dir as the replica's preferred one, so
   the replica the reassignment brings is born there (`place_first`);
2. once the batch's moves are done, every placed replica not in its dir and every disk move is a *dir move*
   (`run_dir_moves`): the alter-log-dirs throttle written on their brokers (the values found recorded first and
   restored with the replication throttles at the batch's end), then AlterReplicaLogDirs, asked again at each
   poll while a broker answers REPLICA_NOT_AVAILABLE; each is followed until the replica sits in its target dir
   with no future replica left; progress is the future replicas' bytes. Before anything of it is written, each
   target dir must keep the plan's disk margin after the copies it receives (as the disk gate holds brokers);
3. at each poll: a dir of the batch's replicas offline (`log_dirs()` reports its error, or AlterReplicaLogDirs
   answers KAFKA_STORAGE_ERROR) is a health stop naming broker and dir; no progress for the stall timeout stops;
   a cancel request stops after the dir moves are back where they were (AlterReplicaLogDirs to the current
   dir drops a future replica); a lost lock stops at once.
Resume re-reads where each replica is: one in its target dir is done, one still copying is followed, one where
it was is asked again. Rollback of a disk move is the disk move back (kops/executor/steps.py).
Worked example: batch 2 holds disk move orders-0 on broker 1, /d1 -> /d2, rate 10 MB/s: throttle
`replica.alter.log.dirs.io.max.bytes.per.second=10000000` on broker 1, AlterReplicaLogDirs {orders-0@1: /d2};
DescribeLogDirs shows /d1 (8 MB) and a future replica in /d2 growing to 8 MB; then /d2 alone: done, throttle
restored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kops.cluster.port import Replica
from kops.errors import KopsError, Refused
from kops.executor import throttles
from kops.executor.disks import what_to_do
from kops.executor.events import BatchProgressed, Message
from kops.executor.record import CANCELLED, RUNNING, BatchRecord, ExecutionRecord
from kops.executor.running import Executor
from kops.executor.stopping import Stale, Stop
from kops.holder import LockLost
from kops.model.placement import DirCopy
from kops.model.plan import Move, Plan
from kops.units import format_size

NOT_HOSTED = "ReplicaNotAvailableError"  # the broker does not host the replica (yet): the dir is kept as preferred
OFFLINE = "KafkaStorageError"


def placements(plan: Plan) -> dict[Replica, str]:
    """The dir each new replica of the plan's moves is to be born in."""
    return {(m.tp, broker): path for m in plan.moves for broker, path in m.placed}


def needs_dirs(plan: Plan) -> bool:
    return bool(plan.disk_moves) or any(m.placed for m in plan.moves)


def refuse_without(ex: Executor, plan_or_record: Plan | ExecutionRecord, can: bool, why: str) -> None:
    """Disk moves on a cluster whose port cannot move replicas between dirs: refused before anything is written,
    in one line saying why and what would."""
    if isinstance(plan_or_record, Plan):
        wanted = len(plan_or_record.disk_moves) + len(placements(plan_or_record))
    else:
        wanted = sum(len(b.disk_moves) for b in plan_or_record.batches)
    if wanted and not can:
        raise Refused(f"{wanted} replica(s) are to go into named log dirs, and moving replicas between log dirs "
                      f"{why}", where=ex.cluster.where)


def place_first(ex: Executor, moves: list[Move], placed: Mapping[Replica, str], what: str) -> None:
    """Step 1: the preferred dir of each new replica the moves place, before the reassignment brings it."""
    wanted = {(m.tp, b): placed[(m.tp, b)] for m in moves for b in m.adding if (m.tp, b) in placed}
    if wanted:
        _accepted(ex.cluster.alter_replica_dirs(wanted), wanted, what)


def _accepted(answers: Mapping[Replica, str | None], wanted: Mapping[Replica, str], what: str) -> set[Replica]:
    """The replicas whose move Kafka took; REPLICA_NOT_AVAILABLE is "not yet"; any other error stops."""
    for (tp, broker), error in sorted(answers.items()):
        if error is None or error == NOT_HOSTED:
            continue
        path = wanted[(tp, broker)]
        if error == OFFLINE:
            raise Stop(f"health stop in {what}: broker {broker}'s log dir {path} is offline ({error}); replace the "
                       f"disk or fix the broker, then `kops apply --resume`")
        raise KopsError(f"{what}: broker {broker} refused {tp} into {path}: {error}", where=path,
                        hint="`kops state -b` lists each broker's log dirs")
    return {r for r, error in answers.items() if error is None}


@dataclass
class _Dirs:
    """The dir moves of a batch being followed."""

    wanted: dict[Replica, str]  # replica -> its target dir
    sizes: dict[Replica, int]
    asked: set[Replica] = field(default_factory=set)  # AlterReplicaLogDirs accepted
    best: int = -1  # the most progress seen (done moves and future bytes): a stall watch
    since: float = 0.0


def dir_targets(batch: BatchRecord, placed: Mapping[Replica, str]) -> dict[Replica, str]:
    wanted = {(m.tp, b): placed[(m.tp, b)] for m in batch.moves for b in m.adding if (m.tp, b) in placed}
    wanted.update({(m.tp, m.broker): m.to_dir for m in batch.disk_moves})
    return wanted


def run_dir_moves(ex: Executor, record: ExecutionRecord, batch: BatchRecord, placed: Mapping[Replica, str]) -> None:
    """Steps 2 and 3 for `batch`, once its moves are done."""
    wanted = dir_targets(batch, placed)
    if not wanted:
        return
    what = f"batch {batch.index}"
    copies = ex.cluster.dir_copies(sorted(wanted))
    moving = {r: d for r, d in wanted.items() if not _settled(copies.get(r), d)}
    if not moving:  # every replica in its dir: an offline dir elsewhere on the broker does not stop this batch
        return
    _health(ex, moving, what)  # before drift: a replica in a failed dir is not listed, and that is not drift
    _refuse_drift(batch, wanted, copies, what)
    _room(ex, record, moving, copies, what)
    snapshot = ex.read_snapshot()
    values = throttles.alter_log_dirs_throttles(record, {b for _, b in moving}, snapshot)
    batch.status, batch.started_at = RUNNING, batch.started_at or ex.clock.now()
    ex.save(record)  # the values found are safe before anything is written
    throttles.write(ex.cluster, record, values)
    ex.save(record)
    sizes = {r: c.size for r, c in copies.items()}
    _follow(ex, record, batch, _Dirs(moving, sizes, since=ex.clock.monotonic()))


def _settled(copy: DirCopy | None, path: str) -> bool:
    return copy is not None and copy.path == path and not copy.moving


def _refuse_drift(batch: BatchRecord, wanted: Mapping[Replica, str], copies: Mapping[Replica, DirCopy],
                  what: str) -> None:
    """A disk move whose replica is gone from its broker, or sits in a third dir, is drift (exit 4)."""
    for m in batch.disk_moves:
        copy = copies.get((m.tp, m.broker))
        if copy is None or copy.path is None:
            raise Stale(f"{what}: broker {m.broker} holds no replica of {m.tp} (expected in {m.from_dir})",
                        hint="make a new plan (kops plan), or roll back (kops rollback)")
        if copy.path not in (m.from_dir, m.to_dir):
            raise Stale(f"{what}: {m.tp} on broker {m.broker} is in {copy.path}, expected {m.from_dir}",
                        hint="make a new plan (kops plan), or roll back (kops rollback)")
    missing = sorted(r for r in wanted if r not in copies)
    if missing:
        tp, broker = missing[0]
        raise Stale(f"{what}: broker {broker} holds no replica of {tp} to place in {wanted[missing[0]]}",
                    hint="make a new plan (kops plan), or roll back (kops rollback)")


def _health(ex: Executor, wanted: Mapping[Replica, str], what: str) -> None:
    """An offline dir on a broker whose replicas the batch puts in dirs, as `log_dirs()` reports it: a health stop
    (the replica's own dir, or its target, may be the one lost)."""
    brokers = {broker for _, broker in wanted}
    for d in ex.cluster.log_dirs():
        if d.error is not None and d.broker in brokers:
            raise Stop(f"health stop in {what}: broker {d.broker}'s log dir {d.path} is offline ({d.error}); "
                       f"replace the disk or fix the broker, then `kops apply --resume`")


def _room(ex: Executor, record: ExecutionRecord, moving: Mapping[Replica, str], copies: Mapping[Replica, DirCopy],
          what: str) -> None:
    """Each target dir keeps the margin of the plan's disk limit after the copies it is about to receive (what a
    future replica already holds is counted in its usable bytes): else a stop before anything is written, as the
    disk gate stops a batch (kops/executor/disks.py). A dir whose figures are not reported is not checked."""
    incoming: dict[tuple[int, str], tuple[int, int]] = {}
    for (tp, broker), path in moving.items():
        copy = copies.get((tp, broker))
        need = 0 if copy is None else copy.size - (copy.future_size if copy.future_path == path else 0)
        count, size = incoming.get((broker, path), (0, 0))
        incoming[(broker, path)] = (count + 1, size + max(0, need))
    for d in ex.cluster.log_dirs():
        count, need = incoming.get((d.broker, d.path), (0, 0))
        if not need or d.usable_bytes is None or not d.total_bytes:
            continue
        margin = round((1 - ex.gate.limit) * d.total_bytes)
        if d.usable_bytes - need < margin:
            raise Stop(f"{what}: broker {d.broker}'s log dir {d.path} has {format_size(d.usable_bytes)} usable, "
                       f"needs {format_size(need)} for its {count} replica(s) + {format_size(margin)} margin (limit "
                       f"{ex.gate.limit:g} of {format_size(d.total_bytes)}); {what_to_do(record.kind)}")


def _follow(ex: Executor, record: ExecutionRecord, batch: BatchRecord, dirs: _Dirs) -> None:
    """Ask for each dir move until Kafka takes it, then poll until every replica sits in its dir."""
    what = f"batch {batch.index}"
    started = ex.clock.monotonic()
    stop_after = False
    while True:
        pending = {r: d for r, d in dirs.wanted.items() if r not in dirs.asked}
        if pending:
            dirs.asked |= _accepted(ex.cluster.alter_replica_dirs(pending), pending, what)
        copies = ex.cluster.dir_copies(sorted(dirs.wanted))
        done = [r for r, d in dirs.wanted.items() if _settled(copies.get(r), d)]
        copied = sum(dirs.sizes.get(r, 0) for r in done) + sum(
            c.future_size for r, c in copies.items() if r not in done and c.future_path == dirs.wanted.get(r))
        total = sum(dirs.sizes.get(r, 0) for r in dirs.wanted)
        elapsed = ex.clock.monotonic() - started
        ex.emit(BatchProgressed(batch.index, len(record.batches), len(dirs.wanted), len(done), total, copied,
                                round(elapsed, 3), None, None, total, copied))
        if len(done) == len(dirs.wanted):
            ex.emit(Message(f"{what}: {len(done)} replica(s) in their log dirs"))
            if stop_after:
                raise Stop(f"stopped after {what} (interrupt)")
            return
        _health(ex, dirs.wanted, what)
        _watch(ex, record, batch, dirs, len(done) + copied, what)
        stop_after = _obey(ex, record, batch, dirs, copies, stop_after)
        ex.clock.sleep(ex.poll)


def _watch(ex: Executor, record: ExecutionRecord, batch: BatchRecord, dirs: _Dirs, progress: int, what: str) -> None:
    now = ex.clock.monotonic()
    if progress > dirs.best:
        dirs.best, dirs.since = progress, now
        batch.progress_at = ex.clock.now()
        return
    if now - dirs.since > ex.stall_timeout:
        left = sorted(set(dirs.wanted))
        tp, broker = left[0]
        raise Stop(f"{what} stalled: no log-dir move progressed for {now - dirs.since:.0f} s, first {tp} on broker "
                   f"{broker} to {dirs.wanted[left[0]]}; fix the cause and run `kops apply --resume`, or "
                   f"`kops rollback`")


def _obey(ex: Executor, record: ExecutionRecord, batch: BatchRecord, dirs: _Dirs,
          copies: Mapping[Replica, DirCopy], stop_after: bool) -> bool:
    """`kops cancel` and signals: stop after the dir moves, or (cancel now) put each back in the dir it is in,
    which drops its future replica; a lost lock stops at once."""
    request = ex.journal.cancel_requested(record.id)
    if request is not None and request.get("now"):
        ex.controls.cancel_now.set()
    elif request is not None:
        stop_after = True
    if ex.controls.cancel_now.is_set():
        ex.journal.clear_cancel(record.id)
        back = {r: c.path for r, c in copies.items() if c.moving and c.path is not None}
        if back:
            ex.cluster.alter_replica_dirs(back)
        throttles.restore(ex.cluster, record)
        batch.status = CANCELLED
        raise Stop(f"batch {batch.index} cancelled in flight: {len(back)} log-dir move(s) dropped, each replica "
                   f"kept in the dir it was in")
    if ex.controls.stop.is_set() and not stop_after:
        stop_after = True
        ex.emit(Message(f"stopping after batch {batch.index}'s log-dir moves complete (interrupt again to cancel)"))
    lock = ex.lock_held
    if lock is not None and lock.lost is not None:
        raise LockLost(lock.lost)
    return stop_after
