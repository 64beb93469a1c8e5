"""Running an execution: `kops apply`, `kops apply --resume`, `kops rollback` (docs/design/architecture.md §2, spec §8).

Apply, in order:
1. refuse a cluster in KRaft migration or with another cluster id (exit 1); take the lock (exit 5 if held);
2. refuse drift against the plan's fingerprint (exit 4) and a reassignment started by someone else (exit 1);
3. record the execution (`/kops/executions/<id>` and beside the plan) before touching anything;
4. non-move changes: topic creations (config, then topic znode, as Kafka's admin), config changes (found
   values recorded), partition additions, KIP-253 shrinks where advertised; then the dirs a drain empties
   cordoned where metadata.version allows it (kops.executor.cordons; a rollback uncordons before its batches);
5. per batch, at its checkpoint: stop if asked; re-check every move's precondition (drift: exit 4); stop
   (exit 3) if a destination's disk, as the cluster reports it now, lacks room for the batch (kops.executor.disks);
   record the throttle values found, write the batch's throttles, create `/admin/reassign_partitions`; follow the
   topic znodes (and KIP-179 lag where advertised) until every move is at its target; stop on a health problem,
   a cancel request or a timeout; restore the throttles and record the batch done;
6. topic deletions, the preferred-leader election, every throttle restored, record done.
A second interrupt (or `kops cancel --now`) cancels the batch in flight (KIP-455 through the Admin API, KIP-236
where the cluster advertises it), then puts each cancelled partition back in its original replica order and
elects its preferred leader (kops.executor.order); elsewhere the batch finishes on its own and kops stops
waiting (`--resume` re-attaches).
Resume continues from the record: a batch in flight is re-attached (or its remaining moves resubmitted),
leftover throttles of an interrupted run are restored, and each move is done, to do, or drift.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace

from kops.cluster.port import Cluster, Fenced, Lock, Replica
from kops.errors import ExitCode, KopsError, Refused
from kops.executor import cordons, health, log_dirs, order, progress, stall, steps, throttles
from kops.executor.disks import DiskGate, disk_limit, what_to_do
from kops.executor.events import (
    BatchDone,
    BatchStarted,
    Done,
    LostLock,
    Message,
    Reporter,
    Resumed,
    Stalled,
    Started,
    Step,
    Stopped,
)
from kops.executor.journal import Journal
from kops.executor.record import CANCELLED, DONE, RUNNING, STOPPED, BatchRecord, ConfigRecord, ExecutionRecord, joined
from kops.executor.rolling import run_rolling
from kops.executor.stall import DEFAULT_STALL_SECONDS, StallWatch
from kops.executor.stopping import Stale, Stop
from kops.holder import LockLost, holder_info
from kops.model.partitions import TopicPartition
from kops.model.plan import Move, Plan, Rolling
from kops.model.snapshot import Snapshot
from kops.planner.fingerprint import drift
from kops.units import format_rate

FULL_READ_SECONDS = 10.0  # polls read the batch's partitions; the whole cluster (health of the rest) this often
PROGRESS_SAVE_SECONDS = 5.0  # a batch's last progress is saved at most this often
THROTTLE_SETTLE_SECONDS = 0.5
CONFIG_SETTLE_SECONDS = 5.0  # a config seen neither as written nor as found is re-read this long before it is drift


@dataclass
class Controls:
    """Set from signal handlers: `stop` = stop at the next checkpoint; `cancel_now` = cancel the batch too."""

    stop: threading.Event = field(default_factory=threading.Event)
    cancel_now: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class Outcome:
    exit_code: ExitCode
    record: ExecutionRecord
    reason: str | None = None


@dataclass
class _Following:
    """What following one batch keeps between polls."""

    base: health.Baseline
    started: float
    timeout: float | None
    done_before: int  # bytes of the batches done before this one
    total: int  # bytes of the whole execution, as learnt
    watch: StallWatch
    last_full: float  # when the whole cluster was last read
    saved_progress: float = 0.0
    stop_after: bool = False
    observed: dict[TopicPartition, int] = field(default_factory=dict)  # sizes learnt from first lags


class Clock:
    """Real time; tests and benches may pass another with the same three methods."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class Executor:
    def __init__(self, cluster: Cluster, reporter: Reporter, controls: Controls | None = None,
                 clock: Clock | None = None, poll_seconds: float = 0.5, batch_timeout: float | None = None,
                 lock_wait: float = 15.0, stall_timeout: float = DEFAULT_STALL_SECONDS,
                 throttle_settle: float = THROTTLE_SETTLE_SECONDS) -> None:
        self.cluster = cluster
        self.throttle_settle = throttle_settle
        self.journal = Journal(cluster.records())
        self.emit = reporter
        self.controls = controls or Controls()
        self.clock = clock or Clock()
        self.poll = poll_seconds
        self.batch_timeout = batch_timeout
        self.lock_wait = lock_wait
        self.stall_timeout = stall_timeout
        self.gate = DiskGate(lambda: self.cluster.log_dirs(), reporter)  # the port as it is then (fenced or not)
        self._uncancellable_said: set[int] = set()  # batches whose "cannot cancel here" was said once
        self._lock: Lock | None = None  # while held, every write goes through a cluster fenced by it
        self._placed: dict[Replica, str] = {}  # the dir each new replica of the plan's moves is born in
        self._raw: Cluster | None = None

    # -- entry points --------------------------------------------------------------------------------------

    def apply(self, plan: Plan, plan_path: str, plan_digest: str, resume: bool = False,
              rate: int | None = None, rolling: Rolling | None = None, allow_incomplete: bool = False) -> Outcome:
        """Run `plan` (batches, or rolling: `rolling`, else the plan's own `rolling`). An incomplete snapshot
        (brokers' views still disagreeing) is refused before anything is written, unless `allow_incomplete`.
        Destinations' disks are held to the plan's `limits.disk` (kops.executor.disks)."""
        self.gate.limit, self.gate.planned = disk_limit(plan), plan.summary.capacity
        snapshot = self.read_snapshot()
        if not allow_incomplete:
            snapshot.refuse_incomplete()
        self._refuse_unsafe(snapshot, plan.cluster_id)
        can = self.cluster.capabilities(snapshot)
        log_dirs.refuse_without(self, plan, can.dir_moves, can.no_dir_moves)
        self._placed = log_dirs.placements(plan)
        if log_dirs.needs_dirs(plan) and (rolling or plan.rolling):
            self.emit(Message("a plan that puts replicas in named log dirs runs in batches: running its batches"))
            rolling, plan = None, replace(plan, rolling=None)
        with self._locked(plan_path) as lock:
            if resume:
                record = self._resumable(plan_digest, "apply")
                if rate is not None and rate != record.rate:
                    self._change_rate(record, rate)
            else:
                self._refuse_interrupted(plan_digest, plan_path)
                changes = drift(plan.fingerprint, snapshot)
                if changes:
                    raise Stale("the cluster changed since the plan was made: " + "; ".join(changes),
                                hint="make a new plan (kops plan)")
                self.refuse_foreign_reassignment(snapshot, None)
                rolling = self._rolling_here(rolling or plan.rolling, snapshot)
                batches = steps.from_plan(plan) if rolling is None else steps.rolling_from_plan(plan, snapshot)
                record = self._new_record("apply", plan_digest, plan_path, snapshot.cluster_id,
                                          batches, rate if rate is not None else plan.throttle_rate)
                record.rolling = rolling
                record.election = list(plan.election)
                record.irreversible = list(plan.rollback.irreversible)
                record.edited = list(plan.edited)
                if plan.edited:
                    self.emit(Message(f"running a plan edited by hand ({', '.join(plan.edited)})"))
                self.journal.create(record)
            lock.update(execution=record.id)
            return self._run(record, plan)

    def _change_rate(self, record: ExecutionRecord, rate: int) -> None:
        """`--resume --throttle`: the rest of the execution at `rate`, the moves still in flight included (as
        re-running Kafka's tool with a new --throttle changes a running reassignment's rate). Their values are
        computed without kops's own earlier entries, so a lower rate someone else set is still kept."""
        before, record.rate = record.rate, rate
        moving = [m for b in record.in_flight for m in b.moves]  # what their throttles cover, as at their start
        wanted = throttles.in_flight_throttles(record, moving, self.read_snapshot()) if moving else {}
        self.save(record)  # the values found are safe before anything is written
        throttles.write(self.cluster, record, wanted)
        self.save(record)
        self.emit(Message(f"throttle {format_rate(rate)} for the rest of this execution "
                          f"(was {'unthrottled' if before is None else format_rate(before)}; "
                          f"{len(moving)} moves in flight re-throttled)"))

    def rollback(self, plan_path: str, plan_digest: str, cluster_id: str | None, execution_id: str | None = None,
                 resume: bool = False, limit: float | None = None, rate: int | None = None) -> Outcome:
        """Undo the last apply of the plan (or `execution_id`); `limit` is the plan's `limits.disk` for the disk
        gate (kops.executor.disks), 0.8 when not given; `rate` (--throttle) replaces the execution's rate, on
        resume for the moves in flight too, as for apply."""
        if limit is not None:
            self.gate.limit = limit
        snapshot = self.read_snapshot()
        self._refuse_unsafe(snapshot, cluster_id)
        with self._locked(plan_path) as lock:
            if resume:
                record = self._resumable(plan_digest, "rollback")
                if rate is not None and rate != record.rate:
                    self._change_rate(record, rate)
            else:
                forward = self.journal.load(execution_id) if execution_id else self.journal.latest(plan_digest, "apply")
                if forward is None:
                    raise KopsError("no execution of this plan to roll back on this cluster",
                                    hint="`kops status` shows the executions; pass --execution ID. An execution "
                                         "is recorded where it ran: through -z in ZooKeeper, through -b in the "
                                         "__kops topic (roll it back the same way)")
                snapshot = self._settle_forward(forward, snapshot)
                record = self._rollback_record(forward, plan_path, plan_digest, snapshot)
                record.rate = rate if rate is not None else record.rate
                can = self.cluster.capabilities(snapshot)
                log_dirs.refuse_without(self, record, can.dir_moves, can.no_dir_moves)
                self.journal.create(record)
                forward.throttles_before.clear()  # the rollback restores them now
                forward.throttles_written.clear()
                self.journal.save(forward)
            lock.update(execution=record.id)
            return self._run(record, None)

    # -- preconditions -------------------------------------------------------------------------------------

    def _rolling_here(self, wanted: Rolling | None, snapshot: Snapshot) -> Rolling | None:
        """Rolling where the cluster accepts moves while others run; elsewhere batches, said once."""
        if wanted is None or self.cluster.capabilities(snapshot).moves_in_flight:
            return wanted
        self.emit(Message("this cluster takes no moves while others run (no KIP-455 Admin "
                          "API, no KIP-236 queue): running the plan's batches instead"))
        return None

    def read_snapshot(self, partitions: Collection[TopicPartition] | None = None) -> Snapshot:
        """The whole cluster, or a poll's view of a batch's partitions (brokers and reassignment included)."""
        return self.cluster.snapshot(only_partitions=partitions)

    def _refuse_unsafe(self, snapshot: Snapshot, cluster_id: str | None) -> None:
        if snapshot.migration:
            raise KopsError("the cluster is migrating to KRaft; kops does not write to it now "
                            "(reassignments during a migration are known to corrupt state)",
                            where=self.cluster.where, hint="finish or roll back the migration first")
        if cluster_id is not None and snapshot.cluster_id != cluster_id:
            raise KopsError(f"this is cluster {snapshot.cluster_id}, the plan is for {cluster_id}",
                            where=self.cluster.where, hint="check -z / -b / -l; plans are made for one cluster")

    def refuse_foreign_reassignment(self, snapshot: Snapshot, batch: BatchRecord | None) -> None:
        """Any partition moving that `batch` does not move refuses the batch: the reassignment znode's, and through
        ZooKeeper also a topic znode's adding replicas, which is all a KIP-455 reassignment (Kafka's tool with
        --bootstrap-server, or kops through -b, whose lock kops through -z cannot see) leaves there. Two runs at
        once share the brokers' throttle rates, and each restores the other's (an outside check on Kafka 3.9 ended
        with throttles left on every broker)."""
        moving = snapshot.in_flight()
        if not moving:
            return
        ours = {} if batch is None else {(m.topic, m.partition): tuple(m.to_replicas) for m in batch.moves}
        foreign = [m for m in moving if ours.get((m.topic, m.partition)) != tuple(m.target or m.replicas)]
        if foreign:
            first = foreign[0]
            raise KopsError(f"a reassignment of {len(foreign)} partitions that is not this execution's is in "
                            f"progress ({first.topic}-{first.partition} among them)", where=self.cluster.where,
                            hint="wait for it to finish (kops status, through -z and -b: each sees only its own "
                                 "lock) or cancel it")

    def _locked(self, plan_path: str) -> _LockScope:
        holder = holder_info(plan_path, None, self.clock.now())
        lock = self.cluster.lock(holder, self.lock_wait, self.clock.sleep, self.clock.monotonic)
        return _LockScope(lock, self)

    def _fence(self, lock: Lock) -> None:
        self._lock, self._raw = lock, self.cluster
        self.cluster = Fenced(self.cluster, lock)  # type: ignore[assignment]  # forwards every Cluster method
        self.journal = Journal(self.cluster.records())

    def _unfence(self) -> None:
        if self._raw is not None:
            self.cluster, self._raw, self._lock = self._raw, None, None
            self.journal = Journal(self.cluster.records())

    def _refuse_interrupted(self, plan_digest: str, plan_path: str) -> None:
        """A new apply of a plan whose last apply was interrupted is refused (resume it or roll it back), unless
        that apply was rolled back since: then it is undone, and the plan applies anew."""
        previous = self.journal.latest(plan_digest, "apply")
        if previous is None or previous.finished:
            return
        undo = self.journal.rollback_of(previous.id)
        if undo is None:
            raise KopsError(f"execution {previous.id} of this plan was interrupted ({previous.status}: "
                            f"{previous.stop_reason or 'no reason recorded'})",
                            hint=f"continue it with `kops apply --resume {plan_path}` or undo it with "
                                 f"`kops rollback {plan_path}`")
        if not undo.finished:
            raise KopsError(f"execution {previous.id} of this plan is being rolled back by {undo.id} ({undo.status})",
                            hint=f"finish the rollback with `kops rollback --resume {plan_path}`, then apply")

    def _resumable(self, plan_digest: str, kind: str) -> ExecutionRecord:
        record = self.journal.latest(plan_digest, kind)
        if record is None or record.finished:
            raise KopsError(f"no interrupted {kind} of this plan to resume",
                            hint="start one with `kops apply PLAN`" if kind == "apply" else "start one with `kops "
                                    "rollback PLAN`")
        undo = self.journal.rollback_of(record.id) if kind == "apply" else None
        if undo is not None:  # its done batches were undone: resumed, it would skip them and call the plan done
            raise KopsError(f"execution {record.id} of this plan was rolled back by {undo.id}: nothing to resume",
                            hint="apply the plan anew with `kops apply PLAN`" if undo.finished else
                                 "finish the rollback with `kops rollback --resume PLAN`")
        record.status, record.stop_reason = RUNNING, None
        self.journal.clear_cancel(record.id)
        self.emit(Resumed(record.id, kind))
        return record

    def _new_record(self, kind: str, plan_digest: str, plan_path: str, cluster_id: str | None,
                    batches: list[BatchRecord], rate: int | None) -> ExecutionRecord:
        now = self.clock.now()
        stamp = dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        base = f"{stamp}-{plan_digest[:8]}-{kind}"
        taken = set(self.journal.ids())
        execution_id, n = base, 1
        while execution_id in taken:
            n += 1
            execution_id = f"{base}-{n}"
        return ExecutionRecord(execution_id, kind, plan_digest, plan_path, cluster_id, now,
                               holder_info(plan_path, execution_id, now), batches, rate, updated_at=now)

    # -- the run -------------------------------------------------------------------------------------------

    def _run(self, record: ExecutionRecord, plan: Plan | None) -> Outcome:
        self.emit(Started(record.id, record.kind, len(record.batches),
                          "batches" if record.rolling is None else "rolling",
                          sum(len(b.moves) for b in record.batches),
                          sum(m.copied_bytes for b in record.batches for m in b.moves)))
        try:
            if record.throttles_before and record.current is None:
                restored = throttles.restore(self.cluster, record)
                self.save(record)
                self.emit(Message(f"restored leftover throttles on {', '.join(restored)}"))
            self._before_batches(record, plan)
            if record.rolling is not None:
                run_rolling(self, record)
            for batch in sorted(record.batches, key=lambda b: b.index):
                if batch.status == DONE:
                    continue
                if batch.status != RUNNING:
                    self.checkpoint(record)
                self._run_batch(record, batch)
            self.checkpoint(record)
            if plan is not None and record.kind == "apply":
                self._deletions(record, plan)
            if record.kind == "rollback":
                self._restore_configs(record)
            self._election(record)
            self._restore_all_throttles(record)
            record.status, record.stop_reason = DONE, None
            self.save(record)
            self.emit(Done(record.id))
            return Outcome(ExitCode.OK, record)
        except Stop as stop:
            record.status, record.stop_reason = STOPPED, stop.reason
            self.save(record)
            self.emit(Stopped(record.id, stop.reason))
            return Outcome(ExitCode.STOPPED, record, stop.reason)
        except LockLost as lost:  # write nothing more: the record belongs to the new holder now
            self.emit(LostLock(record.id, lost.one_line()))
            raise
        except KopsError as exc:
            record.status, record.stop_reason = STOPPED, exc.one_line()
            self.save(record)
            raise
        finally:
            (self._raw or self.cluster).close()

    def _before_batches(self, record: ExecutionRecord, plan: Plan | None) -> None:
        """Apply: the non-move changes, then the drained dirs cordoned; rollback: the cordons restored first, so
        the replicas going back may land where they were."""
        if plan is not None and record.kind == "apply":
            self._non_move_changes(record, plan)
            cordons.cordon(self, record, plan)
        if record.kind == "rollback":
            cordons.uncordon(self, record)

    def _restore_all_throttles(self, record: ExecutionRecord) -> None:
        """The end of an execution: never done with a throttle left behind."""
        if record.throttles_before:
            throttles.restore(self.cluster, record)
        if record.throttles_before:
            raise Stop(f"the throttles on {', '.join(sorted(record.throttles_before))} could not be restored: "
                        f"no answer; `kops apply --resume` restores them once they answer")

    def save(self, record: ExecutionRecord) -> None:
        record.updated_at = self.clock.now()
        self.journal.save(record)

    def checkpoint(self, record: ExecutionRecord) -> None:
        request = self.journal.cancel_requested(record.id)
        if request is not None:
            self.journal.clear_cancel(record.id)
            raise Stop(f"cancelled by {request.get('user', '?')}@{request.get('host', '?')} (kops cancel)")
        if self.controls.stop.is_set() or self.controls.cancel_now.is_set():
            raise Stop("interrupted (signal)")

    # -- non-move changes ----------------------------------------------------------------------------------

    def _step(self, record: ExecutionRecord, name: str, action: Callable[[], str | None]) -> None:
        if name in record.steps_done:
            return
        said = action()
        record.steps_done.append(name)
        self.save(record)
        if said:
            self.emit(Step(said))

    def _non_move_changes(self, record: ExecutionRecord, plan: Plan) -> None:
        for c in plan.creations:
            def create(c=c) -> str:
                self.cluster.create_topic(c.topic, c.assignment, c.config)
                return f"created topic {c.topic} ({len(c.assignment)} partitions)"
            self._step(record, f"create:{c.topic}", create)
        for change in plan.configs:
            def configure(change=change) -> str:
                before = self.cluster.read_config(change.entity_type, change.entity)
                updates: dict[str, str | None] = {k: None for k in change.remove}
                updates.update(change.set)
                self.cluster.alter_config(change.entity_type, change.entity, updates)
                after = self.cluster.read_config(change.entity_type, change.entity)
                record.configs.append(ConfigRecord(change.entity_type, change.entity, before, after))
                return f"configured {change.entity_type}/{change.entity}"
            self._step(record, f"config:{change.entity_type}/{change.entity}", configure)
        for addition in plan.partition_additions:
            def add(addition=addition) -> str:
                if not self.cluster.add_partitions(addition.topic, addition.assignment):
                    return f"partitions of {addition.topic} already added"
                return f"added {len(addition.assignment)} partitions to {addition.topic}"
            self._step(record, f"add:{addition.topic}", add)
        for shrink in plan.partition_deletions:
            def mark(shrink=shrink) -> str:
                self.cluster.shrink_partitions(shrink.topic, shrink.undeleted_partition_count)
                return (f"marked partitions {shrink.undeleted_partition_count}..{shrink.current_count - 1} of "
                        f"{shrink.topic} for deletion")
            self._step(record, f"shrink:{shrink.topic}", mark)

    def _deletions(self, record: ExecutionRecord, plan: Plan) -> None:
        for deletion in plan.deletions:
            def delete(deletion=deletion) -> str:
                self.cluster.delete_topic(deletion.topic)
                return f"deleting topic {deletion.topic}"
            self._step(record, f"delete:{deletion.topic}", delete)

    def _restore_configs(self, record: ExecutionRecord) -> None:
        for c in record.configs:
            def restore(c=c) -> str:
                current = self.cluster.read_config(c.entity_type, c.entity)
                updates: dict[str, str | None] = {k: None for k in current if k not in c.after}
                updates.update(c.after)
                self.cluster.alter_config(c.entity_type, c.entity, updates)
                return f"restored config of {c.entity_type}/{c.entity}"
            self._step(record, f"config:{c.entity_type}/{c.entity}", restore)

    # -- batches -------------------------------------------------------------------------------------------

    def _run_batch(self, record: ExecutionRecord, batch: BatchRecord) -> None:
        snapshot = self.read_snapshot()
        attached = batch.status == RUNNING and bool(snapshot.requested_moves)
        self.refuse_foreign_reassignment(snapshot, batch if batch.status == RUNNING else None)
        todo = self.todo(batch, snapshot)
        self.emit(BatchStarted(batch.index, len(record.batches), len(batch.moves),
                               sum(m.copied_bytes for m in batch.moves),
                               steps.expected_seconds(batch, record.rate), attached))
        if not attached:
            gone = sorted({b for m in todo for b in health.needed(m, snapshot)} - snapshot.live_broker_ids)
            if gone:
                raise Stop(f"batch {batch.index} needs brokers {gone}, which are not registered")
            short = self.gate.check(todo, f"batch {batch.index}")  # before anything of the batch is written
            if short is not None:
                raise Stop(f"{short}; {what_to_do(record.kind)}")
            if todo:
                first_start = batch.started_at is None
                wanted = throttles.plan_batch_throttles(record, todo, snapshot, caps=batch.caps)
                batch.status, batch.started_at = RUNNING, batch.started_at or self.clock.now()
                self.save(record)  # the values found are safe before anything is written
                throttles.write(self.cluster, record, wanted)
                self.save(record)
                if wanted:
                    self.settle_throttles()
                if first_start:
                    batch.started_at = self.clock.now()  # the batch's duration runs from its submission
                log_dirs.place_first(self, todo, self._placed, f"batch {batch.index}")
                self.submit(todo, snapshot, f"batch {batch.index}")
                self.save(record)
        self._follow(record, batch, snapshot)
        log_dirs.run_dir_moves(self, record, batch, self._placed)
        throttles.restore(self.cluster, record, throttles.busy_entities(self.read_snapshot(), batch.tps))
        batch.status, batch.finished_at = DONE, self.clock.now()
        self.save(record)
        self.emit(BatchDone(batch.index, len(record.batches),
                            round(batch.finished_at - (batch.started_at or batch.finished_at), 3)))

    def submit(self, moves: list[Move], snapshot: Snapshot, what: str) -> None:
        try:
            self.cluster.submit([(m.tp, tuple(m.to_replicas)) for m in moves], snapshot)
        except Refused as exc:
            raise KopsError(f"{what}: {exc.what}", where=exc.where or self.cluster.where,
                            hint="another tool started a reassignment; wait for it (kops status)") from None

    def settle_throttles(self) -> None:
        """Brokers apply throttles from config notifications, asynchronously: let them, before the first fetch
        of the new replicas."""
        self.clock.sleep(self.throttle_settle)

    @property
    def lock_held(self) -> Lock | None:
        """The lock while the run holds it (its `lost` says when it was taken away)."""
        return self._lock

    @staticmethod
    def todo(batch: BatchRecord, snapshot: Snapshot) -> list[Move]:
        """Moves still to submit; a partition neither at its original nor at its target replicas is drift."""
        todo: list[Move] = []
        drifted: list[str] = []
        requested = {(m.topic, m.partition) for m in snapshot.requested_moves}
        for m in batch.moves:
            part = snapshot.partition(m.tp)
            now = None if part is None else part.replicas
            if (m.topic, m.partition) in requested or (part is not None and part.reassigning
                                                       and part.target_replicas == tuple(m.to_replicas)):
                continue  # in flight to our target: follow it
            if now == tuple(m.to_replicas):
                continue
            if now is not None and set(now) == set(m.from_replicas):  # its original replicas (order may differ
                todo.append(m)  # after a KIP-236 cancel across a controller failover): move it to the target
            elif now is not None and set(now) == set(m.from_replicas) | set(m.to_replicas):
                # the set Kafka shows while moving to our target: in flight, or just done and this metadata read
                # a moment behind the controller's reassignment list (seen on Kafka 4 at a resume): follow it
                continue
            else:
                drifted.append(f"{m.tp} has {list(now) if now else 'no replicas'}, expected {list(m.from_replicas)}")
        if drifted:
            raise Stale(f"batch {batch.index}: {len(drifted)} partition(s) drifted: " + "; ".join(drifted[:3]),
                        hint="make a new plan (kops plan), or roll back (kops rollback)")
        return todo

    def _follow(self, record: ExecutionRecord, batch: BatchRecord, snapshot: Snapshot) -> None:
        """Until every move of the batch is at its target; raises Stop on health, cancel now or timeout."""
        f = _Following(health.baseline(snapshot, batch.moves), self._batch_started(batch),
                       self._batch_timeout(record, batch),
                       sum(m.copied_bytes for b in record.batches if b.status == DONE for m in b.moves),
                       sum(m.copied_bytes for b in record.batches for m in b.moves),
                       StallWatch(self.stall_timeout, self.clock.monotonic()), self.clock.monotonic())
        while True:
            elapsed = self.clock.monotonic() - f.started
            measured = self._report_progress(record, batch, snapshot, elapsed, f)
            requested = {(x.topic, x.partition) for x in snapshot.requested_moves}
            if measured.done == measured.partitions and not any(m.tp in requested for m in batch.moves):
                return
            self._watch_for_stalls(record, batch, snapshot, measured, f)
            problem = health.problem(snapshot, batch.moves, f.base)
            if problem is not None:
                raise Stop(f"health stop in batch {batch.index}: {problem}; the batch stays with the controller, "
                            f"`kops apply --resume` continues once the cluster is healthy")
            self._obey_requests(record, batch, snapshot, f)
            if f.timeout is not None and elapsed > f.timeout:
                raise Stop(f"batch {batch.index} timed out after {elapsed:.0f} s; it stays with the controller")
            self.clock.sleep(self.poll)
            if self.clock.monotonic() - f.last_full >= FULL_READ_SECONDS:  # health beyond the batch's partitions
                snapshot, f.last_full = self.read_snapshot(), self.clock.monotonic()
            else:
                snapshot = self.read_snapshot(batch.tps)

    def _batch_started(self, batch: BatchRecord) -> float:
        """The batch's start on the monotonic clock (it may have started in an earlier, interrupted run)."""
        return self.clock.monotonic() - max(0.0, self.clock.now() - (batch.started_at or self.clock.now()))

    def _batch_timeout(self, record: ExecutionRecord, batch: BatchRecord) -> float | None:
        """--batch-timeout, else four times what the batch should take at the execution's rate and ten minutes."""
        expected = steps.expected_seconds(batch, record.rate)
        if self.batch_timeout is None and expected:
            return 4 * expected + 600
        return self.batch_timeout

    def _report_progress(self, record: ExecutionRecord, batch: BatchRecord, snapshot: Snapshot, elapsed: float,
                         f: _Following) -> progress.BatchProgress:
        measured = progress.measure(batch.index, len(record.batches), batch.moves, snapshot, elapsed,
                                    self.cluster.lags, f.observed)
        f.total = max(f.total, f.done_before + measured.bytes_total)
        overall_eta = progress.seconds_left(f.total - f.done_before, measured.bytes_done, measured.rate)
        self.emit(measured.event(f.total, f.done_before + measured.bytes_done, overall_eta))
        return measured

    def _watch_for_stalls(self, record: ExecutionRecord, batch: BatchRecord, snapshot: Snapshot,
                          measured: progress.BatchProgress, f: _Following) -> None:
        now = self.clock.monotonic()
        if f.watch.observe(now, stall.signature(snapshot, batch.moves, measured.bytes_done)):
            batch.progress_at = self.clock.now()
            if now - f.saved_progress > PROGRESS_SAVE_SECONDS:  # for kops status
                self.save(record)
                f.saved_progress = now
        elif f.watch.stalled(now):
            self._stalled(batch, snapshot, f.watch.stalled_for(now))

    def _obey_requests(self, record: ExecutionRecord, batch: BatchRecord, snapshot: Snapshot, f: _Following) -> None:
        """`kops cancel` (stop after the batch, or --now), signals, and a lost lock."""
        request = self.journal.cancel_requested(record.id)
        if request is not None and request.get("now"):
            self.controls.cancel_now.set()
        elif request is not None:
            f.stop_after = True
        if self.controls.cancel_now.is_set():
            self._cancel_in_flight(record, batch, snapshot)
        if self.controls.stop.is_set() and not f.stop_after:
            f.stop_after = True
            if batch.index not in self._uncancellable_said:  # a cancel --now it cannot obey said so already
                self.emit(Message(f"stopping after batch {batch.index} completes "
                                  f"(interrupt again to cancel it)"))
        if self._lock is not None and self._lock.lost is not None:
            raise LockLost(self._lock.lost)  # stop at once: no more submissions, no more record saves

    def _stalled(self, batch: BatchRecord, snapshot: Snapshot, seconds: float) -> None:
        stuck = stall.explain(snapshot, batch.moves, progress.done_moves(snapshot, batch.moves))
        for line in stuck:
            self.emit(Stalled(batch.index, line))
        raise Stop(f"batch {batch.index} stalled: no progress for {seconds:.0f} s; {len(stuck)} partition(s) stuck, "
                    f"first {stuck[0] if stuck else '?'}; the batch stays with the controller, fix the cause and "
                    f"run `kops apply --resume`, or `kops rollback`")

    def _cancel_in_flight(self, record: ExecutionRecord, batch: BatchRecord, snapshot: Snapshot) -> None:
        can = self.cluster.capabilities(snapshot)
        if not can.cancel_in_flight:
            # Stop at the checkpoint instead (the batch finishes, its throttles are restored), and say so.
            self.controls.cancel_now.clear()
            self.controls.stop.set()
            if batch.index in self._uncancellable_said:
                return
            self._uncancellable_said.add(batch.index)
            self.emit(Message(f"batch {batch.index} cannot be cancelled on this cluster {can.no_cancel}: it "
                              f"finishes, then kops stops at the checkpoint"))
            return
        self.journal.clear_cancel(record.id)
        how = can.cancel_by
        self.emit(Message(f"cancelling batch {batch.index} in flight ({how})"))
        order.cancel_in_order(self.cluster, batch.moves, self.clock, self.emit)
        throttles.restore(self.cluster, record)
        batch.status = CANCELLED
        raise Stop(f"batch {batch.index} cancelled in flight ({how}): its partitions are back on their "
                    f"original replicas in their original order, except those that had completed")

    def _election(self, record: ExecutionRecord) -> None:
        if not record.election or record.election_done:
            return
        if not self.cluster.elect_preferred(record.election, 60.0):
            self.emit(Message("the controller has not finished the preferred-leader election yet"))
        record.election_done = True
        self.save(record)
        self.emit(Step(f"preferred-leader election for {len(record.election)} partitions"))

    # -- rollback ------------------------------------------------------------------------------------------

    def _settle_forward(self, forward: ExecutionRecord, snapshot: Snapshot) -> Snapshot:
        """Step 0 of a rollback: nothing of `forward` may still be moving (cancel it, or wait for it). A rolling
        execution may have left several moves in flight, each its own batch: all of them."""
        running = forward.in_flight
        if not running or not snapshot.requested_moves:
            self.refuse_foreign_reassignment(snapshot, None)
            return snapshot
        current = joined(running)
        self.refuse_foreign_reassignment(snapshot, current)
        what = f"batch {running[0].index}" if len(running) == 1 else f"the {len(running)} moves"
        can = self.cluster.capabilities(snapshot)
        if can.cancel_in_flight:
            self.emit(Message(f"cancelling {what} of {forward.id} in flight ({can.cancel_by})"))
            order.cancel_in_order(self.cluster, current.moves, self.clock, self.emit)
        else:
            self.emit(Message(f"waiting for {what} of {forward.id} to finish "
                              f"(the cluster cannot cancel it)"))
            while self.read_snapshot().requested_moves:
                if self.controls.stop.is_set():
                    raise KopsError("interrupted while waiting for the batch in flight", hint="run the rollback again")
                self.clock.sleep(self.poll)
        for batch in running:
            batch.status = CANCELLED
        forward.status = STOPPED
        self.journal.save(forward)
        return self.read_snapshot()

    def _configs_now(self, forward: ExecutionRecord) -> dict[str, dict[str, str]]:
        found = self.cluster.read_configs([(c.entity_type, c.entity) for c in forward.configs])
        return {f"{entity_type}/{name}": config for (entity_type, name), config in found.items()}

    def _rollback_record(self, forward: ExecutionRecord, plan_path: str, plan_digest: str,
                         snapshot: Snapshot) -> ExecutionRecord:
        undo = steps.rollback_of(forward, snapshot, self._configs_now(forward))
        settle_until = self.clock.monotonic() + CONFIG_SETTLE_SECONDS
        while any(d.startswith("config of") for d in undo.drift) and self.clock.monotonic() < settle_until:
            self.clock.sleep(0.5)  # a KRaft broker answers from its metadata image, which may lag the write
            undo = steps.rollback_of(forward, snapshot, self._configs_now(forward))
        if undo.drift:
            raise Stale(f"cannot roll back {forward.id}: " + "; ".join(undo.drift[:3])
                        + (f" (and {len(undo.drift) - 3} more)" if len(undo.drift) > 3 else ""),
                        hint="the cluster changed since; plan the layout you want instead (kops plan)")
        gone = sorted({b for batch in undo.batches for m in batch.moves for b in m.to_replicas}
                      - snapshot.live_broker_ids)
        if gone:  # e.g. undoing a healing (docs/design/healing.md): such a reassignment could never complete
            raise Refused(f"cannot roll back {forward.id}: it would put replicas back on broker(s) "
                          f"{', '.join(map(str, gone))}, which are not registered",
                          hint="start them again first, or leave the layout as it is")
        record = self._new_record("rollback", plan_digest, plan_path, snapshot.cluster_id, undo.batches, forward.rate)
        record.of = forward.id
        record.rolling = forward.rolling
        record.configs = undo.configs
        record.election = undo.election
        record.irreversible = undo.irreversible
        record.throttles_before = {k: dict(v) for k, v in forward.throttles_before.items()}
        record.throttles_written = {k: dict(v) for k, v in forward.throttles_written.items()}
        record.cordons = [replace(c) for c in forward.cordons]  # restored before its batches
        return record


class _LockScope:
    """Holds the lock; meanwhile the executor writes through a client fenced by it."""

    def __init__(self, lock: Lock, executor: Executor) -> None:
        self.lock = lock
        self.executor = executor

    def __enter__(self) -> Lock:
        self.lock.acquire()
        self.executor._fence(self.lock)
        return self.lock

    def __exit__(self, *exc: object) -> None:
        self.executor._unfence()
        self.lock.release()
