"""Rolling execution (`execution.mode: rolling`, `kops apply --rolling`): moves submitted as others finish.

The record holds one batch per move, in rolling order (kops.planner.rolling); a batch's status is its move's
state, so `--resume` and `kops rollback` work after a kill -9 as they do for batches. Each poll:
1. read the topics of the moves in flight (the whole cluster every FULL_READ_SECONDS and before submitting);
2. moves at their target are done: recorded, and the throttles rewritten to cover exactly the moves still in
   flight (an entity no move in flight needs any more goes back to what was found);
3. requests: `kops cancel` or a first signal submit nothing more and stop once the moves in flight finish;
   `kops cancel --now` or a second signal cancel them (KIP-455, or KIP-236 through ZooKeeper), put each back
   in its original replica order with its preferred leader (kops.executor.order), and stop;
4. health and stalls, as for a batch (over the moves in flight);
5. the checkpoint, then the next moves in rolling order that fit the caps (at most N in flight touching any
   broker, M in all) and their destinations' disks as the cluster reports them now (kops.executor.disks: a move
   that does not fit is held back while moves in flight may still free space; with nothing in flight the run
   stops, exit 3): every one re-checked against the cluster (drift: exit 4), the throttle values found
   recorded, the throttles for the moves in flight and the new ones written, then the moves submitted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kops.executor import health, order, progress, stall, throttles
from kops.executor.disks import what_to_do
from kops.executor.events import (
    Message,
    MoveDone,
    MoveProgress,
    MoveStarted,
    RollingProgressed,
    RollingStarted,
    Stalled,
)
from kops.executor.record import CANCELLED, DONE, PENDING, RUNNING, BatchRecord, ExecutionRecord, joined
from kops.executor.running import Executor
from kops.executor.stall import StallWatch
from kops.executor.stopping import Stop
from kops.holder import LockLost
from kops.model.partitions import TopicPartition
from kops.model.plan import Move, Rolling
from kops.model.snapshot import Snapshot
from kops.planner.rolling import Rooms, Source, admissible, leader_of, planned_room, short_of
from kops.units import format_rate, format_size

FULL_READ_SECONDS = 10.0


@dataclass
class _State:
    """What a rolling run keeps between polls."""

    limits: Rolling
    base: health.Baseline
    watch: StallWatch
    started: float  # monotonic
    last_full: float = -1e9
    stopping: bool = False  # submit nothing more; stop once the moves in flight finish
    stop_reason: str = "interrupted (signal)"
    observed: dict[TopicPartition, int] = field(default_factory=dict)
    done_before: int = 0  # bytes of the moves done when this run started
    held: set[int] = field(default_factory=set)  # brokers said short of disk room, while they are


def run_rolling(ex: Executor, record: ExecutionRecord) -> None:
    """Every move of `record` to its target, within the caps; raises Stop where a batch run would."""
    assert record.rolling is not None
    snapshot = ex.read_snapshot()
    ex.refuse_foreign_reassignment(snapshot, joined(record.in_flight))
    _settle_resumed(ex, record, snapshot)
    now = ex.clock.monotonic()
    base = health.baseline(snapshot, [m for b in record.batches for m in b.moves])
    state = _State(record.rolling, base, StallWatch(ex.stall_timeout, now), now, now,
                   done_before=sum(m.copied_bytes for b in record.batches if b.status == DONE for m in b.moves))
    ex.emit(RollingStarted(len(record.batches), state.limits.max_moves_per_broker, state.limits.max_moves))
    while True:
        _finish_done(ex, record, snapshot)
        running = record.in_flight
        pending = [b for b in record.batches if b.status in (PENDING, CANCELLED)]
        _report(ex, record, snapshot, state)
        if not running and (not pending or state.stopping):
            if pending:  # the brokers' rates kept for the moves left (_rates_still_needed) go now
                throttles.restore(ex.cluster, record)
                ex.save(record)
                raise Stop(state.stop_reason)
            return
        _obey_requests(ex, record, snapshot, state)
        _check_health(ex, record, snapshot, state)
        if not state.stopping and pending:
            snapshot = _submit_next(ex, record, pending, state)
        ex.clock.sleep(ex.poll)
        snapshot = _read(ex, record, state)


def _read(ex: Executor, record: ExecutionRecord, state: _State) -> Snapshot:
    now = ex.clock.monotonic()
    if now - state.last_full >= FULL_READ_SECONDS or not record.in_flight:
        state.last_full = now
        return ex.read_snapshot()
    return ex.read_snapshot([m.tp for b in record.in_flight for m in b.moves])


def _settle_resumed(ex: Executor, record: ExecutionRecord, snapshot: Snapshot) -> None:
    """After an interruption: a move recorded in flight is done, still in flight, or back at its origin."""
    requested = {(m.topic, m.partition) for m in snapshot.requested_moves}
    for batch in record.in_flight:
        move = batch.moves[0]
        part = snapshot.partition(move.tp)
        if progress.is_done(snapshot, move, requested):
            batch.status, batch.finished_at = DONE, ex.clock.now()
        elif (move.topic, move.partition) in requested:
            continue
        elif part is not None and set(part.replicas) == set(move.from_replicas):
            batch.status = PENDING
    ex.save(record)


def _finish_done(ex: Executor, record: ExecutionRecord, snapshot: Snapshot) -> None:
    requested = {(m.topic, m.partition) for m in snapshot.requested_moves}
    finished = [b for b in record.in_flight if progress.is_done(snapshot, b.moves[0], requested)]
    if not finished:
        return
    for batch in finished:
        batch.status, batch.finished_at = DONE, ex.clock.now()
        ex.emit(MoveDone(batch.moves[0].topic, batch.moves[0].partition,
                         round(batch.finished_at - (batch.started_at or batch.finished_at), 3)))
    _rewrite_throttles(ex, record)


def _rewrite_throttles(ex: Executor, record: ExecutionRecord, fresh: Snapshot | None = None) -> bool:
    """Throttles covering exactly the moves in flight (the record marks those about to be submitted in flight
    first), from the configs of `fresh`, a snapshot just read (None: read one now). Whether a broker's rate was
    written (the brokers then get a moment before the moves start). The record is saved before anything is
    written."""
    moves = [m for b in record.in_flight for m in b.moves]
    fresh = ex.read_snapshot() if fresh is None else fresh
    wanted = throttles.in_flight_throttles(record, moves, fresh)
    ex.save(record)  # the values found are safe before anything is written
    ours = {m.tp for m in moves}
    busy = throttles.busy_entities(fresh, ours) | _rates_still_needed(record)
    rates = throttles.write_in_flight(ex.cluster, record, wanted, busy)
    ex.save(record)
    return rates


def _rates_still_needed(record: ExecutionRecord) -> set[str]:
    """Brokers a move still to submit works: their rates stay between moves (a rate throttles only the
    replicas listed, so it holds nothing back meanwhile), which spares the brokers a new rate, and the moment
    it takes, at each submission. The run's end restores them."""
    return {throttles.entity_key("brokers", str(b)) for batch in record.batches if batch.status in (PENDING, CANCELLED)
            for m in batch.moves for b in (*m.from_replicas, *m.to_replicas)}


def _report(ex: Executor, record: ExecutionRecord, snapshot: Snapshot, state: _State) -> None:
    running = record.in_flight
    moves = [b.moves[0] for b in running]
    each = progress.per_move(moves, snapshot, ex.cluster.lags, state.observed)
    done = [b for b in record.batches if b.status == DONE]
    total = sum(m.copied_bytes or state.observed.get(m.tp, 0) * len(m.adding) for b in record.batches for m in b.moves)
    done_bytes = sum(m.copied_bytes for b in done for m in b.moves)
    copied = done_bytes + sum(c for c, _t in each.values())
    elapsed = ex.clock.monotonic() - state.started
    moved_here = copied - state.done_before
    rate = moved_here / elapsed if elapsed > 0 and moved_here > 0 else None
    now = ex.clock.now()
    in_flight: list[MoveProgress] = []
    for batch, move in zip(running, moves, strict=True):
        c, t = each[move.tp]
        took = now - (batch.started_at or now)
        move_rate = c / took if took > 0 and c else None
        eta = progress.seconds_left(t, c, move_rate)
        in_flight.append(MoveProgress(move.topic, move.partition, c, t, None if eta is None else round(eta, 1)))
    eta = progress.seconds_left(total, copied, rate)
    ex.emit(RollingProgressed(len(record.batches), len(done), tuple(in_flight), total, copied, round(elapsed, 3),
                              None if rate is None else round(rate, 1), None if eta is None else round(eta, 1),
                              total, copied))
    moving = ex.clock.monotonic()
    if state.watch.observe(moving, stall.signature(snapshot, moves, copied)):
        for batch in running:
            batch.progress_at = now
    elif running and state.watch.stalled(moving):
        stuck = stall.explain(snapshot, moves, progress.done_moves(snapshot, moves))
        for line in stuck:
            ex.emit(Stalled(0, line))
        raise Stop(f"rolling execution stalled: no progress for {state.watch.stalled_for(moving):.0f} s; "
                   f"{len(stuck)} move(s) stuck, first {stuck[0] if stuck else '?'}; the moves stay with the "
                   f"controller, fix the cause and run `kops apply --resume`, or `kops rollback`")


def _obey_requests(ex: Executor, record: ExecutionRecord, snapshot: Snapshot, state: _State) -> None:
    """`kops cancel` (stop submitting, or --now), signals, a lost lock."""
    request = ex.journal.cancel_requested(record.id)
    if request is not None:
        if request.get("now"):
            ex.controls.cancel_now.set()
        elif not state.stopping:
            ex.journal.clear_cancel(record.id)
            state.stopping = True
            state.stop_reason = f"cancelled by {request.get('user', '?')}@{request.get('host', '?')} (kops cancel)"
            ex.emit(Message("submitting nothing more; stopping when the moves in flight finish"))
    if ex.controls.cancel_now.is_set() and record.in_flight:
        _cancel_in_flight(ex, record, snapshot)
    if (ex.controls.stop.is_set() or ex.controls.cancel_now.is_set()) and not state.stopping:
        state.stopping = True
        ex.emit(Message(f"submitting nothing more; stopping when the {len(record.in_flight)} "
                        f"move(s) in flight finish (interrupt again to cancel them)"))
    lock = ex.lock_held
    if lock is not None and lock.lost is not None:
        raise LockLost(lock.lost)


def _cancel_in_flight(ex: Executor, record: ExecutionRecord, snapshot: Snapshot) -> None:
    can = ex.cluster.capabilities(snapshot)
    if not can.cancel_in_flight:
        ex.controls.cancel_now.clear()
        ex.controls.stop.set()
        ex.emit(Message(f"the moves in flight cannot be cancelled on this cluster {can.no_cancel}: they finish, "
                        f"then kops stops"))
        return
    ex.journal.clear_cancel(record.id)
    running = record.in_flight
    ex.emit(Message(f"cancelling the {len(running)} move(s) in flight ({can.cancel_by})"))
    order.cancel_in_order(ex.cluster, [b.moves[0] for b in running], ex.clock, ex.emit)
    throttles.restore(ex.cluster, record)
    for batch in running:
        batch.status = CANCELLED
    raise Stop(f"{len(running)} move(s) cancelled in flight ({can.cancel_by}): their partitions are back on "
               f"their original replicas in their original order, except those that had completed")


def _check_health(ex: Executor, record: ExecutionRecord, snapshot: Snapshot, state: _State) -> None:
    moves = [m for b in record.in_flight for m in b.moves]
    problem = health.problem(snapshot, moves, state.base)
    if problem is not None:
        raise Stop(f"health stop: {problem}; the moves in flight stay with the controller, "
                   f"`kops apply --resume` continues once the cluster is healthy")


def _within_disks(ex: Executor, record: ExecutionRecord, ready: list[Move], in_flight: list[Move], state: _State,
                  choose: Callable[[list[Move]], list[Move]]) -> list[Move]:
    """The caps' choice among the ready moves whose destinations have room now. A move without room is held
    back (said once per broker short) while moves in flight may still free space; with none in flight the run
    stops, as a `kops cancel` does, once nothing more can start."""
    chosen, held = ex.gate.admit(ready, in_flight, choose)
    if held and not chosen and not in_flight:
        tp, short = next(iter(held.items()))
        state.stopping = True
        state.stop_reason = (f"{tp}: {short.describe(ex.gate.limit)}, and no move in flight to free space; "
                             f"{what_to_do(record.kind)}")
        return []
    for tp, short in held.items():
        broker = short.room.broker
        if broker not in state.held:
            state.held.add(broker)
            count = sum(s.room.broker == broker for s in held.values())
            ex.emit(Message(f"holding back {count} move(s) to broker {broker}, first {tp}: "
                            f"{short.describe(ex.gate.limit)}; waiting for the moves in flight"))
    state.held &= {s.room.broker for s in held.values()}  # one with room again is said again if short again
    return chosen


def _within_plan(ex: Executor, record: ExecutionRecord, ready: list[Move], in_flight: list[Move], state: _State,
                 leaders: Source) -> tuple[list[Move], Rooms | None]:
    """The caps' choice among the ready moves whose destinations have room under the plan's own limits, disk,
    network in and replica cap (kops.planner.rolling.planned_room: what the plan knew, less the moves done and in
    flight), and that room. A move without it waits for the moves in flight; with none in flight the run stops,
    as a `kops cancel` does."""
    done = [m for b in record.batches if b.status == DONE for m in b.moves]
    room = planned_room(ex.gate.planned, done, in_flight)
    chosen = admissible(ready, in_flight, state.limits, leaders, room)
    if chosen or room is None or in_flight or not admissible(ready, in_flight, state.limits, leaders):
        return chosen, room
    for m in ready:
        short = short_of(m, room)
        if short is not None:
            state.stopping, state.stop_reason = True, _no_room(m, *short, record.kind)
            break
    return chosen, room


def _no_room(m: Move, resource: str, broker: int, free: float, kind: str) -> str:
    """Why a rolling run stops: the move's destination has no room under the plan's limit of `resource`."""
    if resource == "disk":
        return (f"{m.tp}: broker {broker} has {format_size(max(0.0, free))} of room left under the plan's disk "
                f"limit, needs {format_size(m.bytes)} for its new replica, and no move in flight to free space; "
                f"{what_to_do(kind)}")
    if resource == "replicas":
        return (f"{m.tp}: broker {broker} holds as many replicas as the plan's replica cap allows, and no move in "
                f"flight frees one; {what_to_do(kind, 'move a replica off it', 'capacity.max_replicas')}")
    return (f"{m.tp}: broker {broker} has {format_rate(max(0.0, free))} of network in left under the plan's limit, "
            f"needs {format_rate(m.write_rate or 0.0)} for its new replica, and no move in flight to free any; "
            f"{what_to_do(kind, 'move load off it', 'capacity.limits.network_in')}")


def _submit_next(ex: Executor, record: ExecutionRecord, pending: list[BatchRecord], state: _State) -> Snapshot:
    """The checkpoint, then the next moves that fit the caps. Returns the snapshot read for it."""
    running = record.in_flight
    in_flight = [b.moves[0] for b in running]
    if len(in_flight) >= (state.limits.max_moves or len(record.batches) + 1):
        return ex.read_snapshot([m.tp for m in in_flight])
    ex.checkpoint(record)
    snapshot = ex.read_snapshot()
    state.last_full = ex.clock.monotonic()
    foreign = [m for m in snapshot.requested_moves
               if TopicPartition(m.topic, m.partition) not in {x.tp for x in in_flight}]
    if foreign:
        state.stopping, state.stop_reason = True, (f"a reassignment of {len(foreign)} partition(s) that is not this "
                                                   f"execution's started; `kops apply --resume` once it is done")
        ex.emit(Message(state.stop_reason))
        return snapshot
    todo = {m.tp for m in ex.todo(joined(pending), snapshot)}
    for batch in pending:  # at their target already (someone else moved them): done
        if batch.moves[0].tp not in todo:
            batch.status, batch.finished_at = DONE, ex.clock.now()
    ready = [b for b in pending if b.moves[0].tp in todo]
    leaders = leader_of(snapshot)
    chosen_moves, room = _within_plan(ex, record, [b.moves[0] for b in ready], in_flight, state, leaders)
    if chosen_moves:  # the caps and the plan's room allow some: which fit the disks now
        chosen_moves = _within_disks(ex, record, [b.moves[0] for b in ready], in_flight, state,
                                     lambda moves: admissible(moves, in_flight, state.limits, leaders, room))
    if not chosen_moves:
        return snapshot
    gone = sorted({b for m in chosen_moves for b in health.needed(m, snapshot)} - snapshot.live_broker_ids)
    if gone:
        raise Stop(f"the next moves need brokers {gone}, which are not registered")
    chosen = {m.tp for m in chosen_moves}
    starting = [b for b in ready if b.moves[0].tp in chosen]
    now = ex.clock.now()
    for batch in starting:  # in the record before anything is written (saved below): if kops dies or loses
        batch.status, batch.started_at = RUNNING, now  # the lock after the submission, resume and rollback know
    if _rewrite_throttles(ex, record, snapshot):
        ex.settle_throttles()
    ex.submit(chosen_moves, snapshot, "the next moves")
    for batch in starting:
        ex.emit(MoveStarted(batch.moves[0].topic, batch.moves[0].partition, batch.moves[0].copied_bytes,
                            len(in_flight) + len(chosen)))
    ex.save(record)
    return snapshot
