"""A rehearsal's findings, from the executor's events and the observer's readings, in production time.

Per batch: the plan's estimate beside the measured duration (clone seconds times the scaling factor), the
busiest destination's replication rate against the throttle, under-replicated partition-seconds, the slowest
partition and why, stalls. Then the rollback's duration, whether the layout came back, and a verdict with
its exit code: 0 the estimates hold within the tolerance, 2 some are off (named, by how much), 3 a batch
stalled, a health gate stopped the run, or the rollback did not restore the layout.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from kops.errors import ExitCode
from kops.executor.events import BatchDone, BatchStarted, Event, MoveDone, RollingStarted, Stalled
from kops.model.plan import Batch, Plan
from kops.planner.markdown import duration
from kops.rehearsal.calibration import Latency
from kops.rehearsal.observer import Observations
from kops.rehearsal.scaling import Scaling
from kops.units import format_size

TOLERANCE = 0.25
RESOLUTION_SECONDS = 1.0  # a batch estimated shorter than this on the clone is shown, not judged: the clone's
# polling and fetch rounds are a fixed part of it that production does not have multiplied
NO_LATENCY = Latency(0.0, 0.0, 1)
Events = list[tuple[float, Event]]  # (monotonic time, executor event)


@dataclass
class BatchResult:
    index: int
    moves: int
    bytes: int  # production bytes
    estimate_seconds: float | None
    measured_seconds: float | None  # production seconds; None when the batch did not finish
    started_at: float | None  # production seconds from the first batch's start
    throttle: int | None  # production bytes/s per broker
    peak_broker: int | None = None
    peak_rate: float | None = None  # production bytes/s into the busiest destination
    urp_seconds: float = 0.0  # under-replicated partition-seconds, production time
    slowest: str | None = None
    slowest_why: str | None = None
    stalls: list[str] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)
    judged: bool = True  # long enough on the clone to measure against its estimate (RESOLUTION_SECONDS)

    @property
    def error(self) -> float | None:
        if self.measured_seconds is None or not self.estimate_seconds:
            return None
        return self.measured_seconds / self.estimate_seconds - 1.0

    def off(self, tolerance: float) -> bool:
        return self.judged and self.error is not None and abs(self.error) > tolerance


@dataclass
class Report:
    cluster: str
    engine: str
    sample: str
    scaling: dict[str, object]
    mode: str  # batches | rolling
    batches: list[BatchResult]
    estimate_seconds: float | None
    measured_seconds: float | None
    stopped: str | None  # why the apply stopped, if it did
    rollback_seconds: float | None
    rollback_stopped: str | None
    layout_restored: bool
    layout_differences: list[str]
    clone_seconds: float  # wall seconds to start and fill the clone
    latency_seconds: float = 0.0  # the clone's time to complete one empty move: not scaled
    latency_batch_seconds: float = 0.0  # ... as many as the largest batch
    apply_wall_seconds: float | None = None  # wall seconds of each execution on the clone
    rollback_wall_seconds: float | None = None
    tolerance: float = TOLERANCE
    traffic: dict[str, float] = field(default_factory=dict)  # topic -> production bytes/s
    notes: list[str] = field(default_factory=list)

    @property
    def total_error(self) -> float | None:
        if self.measured_seconds is None or not self.estimate_seconds:
            return None
        return self.measured_seconds / self.estimate_seconds - 1.0

    def off_batches(self) -> list[BatchResult]:
        return [b for b in self.batches if b.off(self.tolerance)]

    @property
    def exit_code(self) -> int:
        if self.stopped or any(b.stalls for b in self.batches) or self.rollback_stopped or not self.layout_restored:
            return 3
        total = self.total_error
        if self.off_batches() or total is None or abs(total) > self.tolerance:
            return 2
        return int(ExitCode.OK)

    def verdict(self) -> str:
        code = self.exit_code
        if code == 3:
            return "STOPPED: " + "; ".join(self._stop_reasons())
        total = self.total_error
        if total is None:
            return "OFF: the run measured no duration to compare with the plan's estimate"
        head = (f"the plan's estimate of {duration(self.estimate_seconds)} "
                f"{'holds' if abs(total) <= self.tolerance else 'is off'}"
                f" (measured {duration(self.measured_seconds)}, {_pct(total)}, tolerance ±{self.tolerance:.0%})")
        off = self.off_batches()
        if code == 0:
            return "OK: " + head + self._unjudged()
        named = ", ".join(f"{_name(b)} {_pct(b.error)}" for b in off[:8]) + (" ..." if len(off) > 8 else "")
        return "OFF: " + head + (f"; batches off: {named}" if off else "") + self._unjudged()

    def _unjudged(self) -> str:
        short = [b for b in self.batches if not b.judged and b.estimate_seconds]
        if not short:
            return ""
        return (f" ({len(short)} batch(es) under {RESOLUTION_SECONDS:g} s on the clone are shown, not judged; "
                f"a smaller --scale judges them)")

    def _stop_reasons(self) -> list[str]:
        reasons = []
        if self.stopped:
            reasons.append(self.stopped)
        for b in self.batches:
            reasons += [f"batch {b.index} stalled: {s}" for s in b.stalls[:1]]
            if b.unfinished and self.stopped:
                reasons.append(f"batch {b.index} left {len(b.unfinished)} partition(s) unfinished: "
                               + ", ".join(b.unfinished[:10]) + (" ..." if len(b.unfinished) > 10 else ""))
        if self.rollback_stopped:
            reasons.append(f"rollback stopped: {self.rollback_stopped}")
        if not self.layout_restored:
            reasons.append("the rollback did not restore the layout: " + "; ".join(self.layout_differences[:5]))
        return reasons

    def as_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        doc.update(exit_code=self.exit_code, verdict=self.verdict(), total_error=_round(self.total_error))
        for row, b in zip(doc["batches"], self.batches):
            row["error"] = _round(b.error)
        return doc


def batch_results(plan: Plan, scaling: Scaling, events: Events, seen: Observations,
                  latency: Latency = NO_LATENCY) -> list[BatchResult]:
    """One row per batch of the plan, in production units (the clone's fixed `latency` is not scaled)."""
    starts = {e.batch: t for t, e in events if isinstance(e, BatchStarted)}
    done = {e.batch: (t, e.seconds) for t, e in events if isinstance(e, BatchDone)}
    stalls = [(e.batch, e.text) for _t, e in events if isinstance(e, Stalled)]
    origin = min(starts.values()) if starts else 0.0
    rows = []
    for batch in plan.batches:
        start = starts.get(batch.index)
        finished = done.get(batch.index)
        measured = None if finished is None else _unscaled(_copy_seconds(batch, finished, seen), scaling,
                                                           latency.for_moves(len(batch.moves)))
        row = BatchResult(batch.index, len(batch.moves), batch.bytes, batch.estimate.seconds, measured,
                          None if start is None else scaling.production_seconds(start - origin), batch.throttle.rate,
                          stalls=[text for index, text in stalls if index == batch.index],
                          judged=(batch.estimate.seconds or 0.0) / scaling.factor >= RESOLUTION_SECONDS)
        if start is not None:
            end = finished[0] if finished else max((t for t, _e in events), default=start)
            row.urp_seconds = round(scaling.production_seconds(seen.urp_seconds(start, end)), 1)
        _peak(row, batch)
        _slowest(row, batch, seen, scaling, start)
        row.unfinished = [str(m.tp) for m in batch.moves if m.tp not in seen.done_at] if start is not None else []
        rows.append(row)
    return rows


def _unscaled(clone_seconds: float, scaling: Scaling, latency: float) -> float:
    """Production seconds: what is beyond the clone's fixed latency times F, plus the latency once."""
    return scaling.production_seconds(max(0.0, clone_seconds - latency)) + min(latency, clone_seconds)


def _copy_seconds(batch: Batch, finished: tuple[float, float], seen: Observations) -> float:
    """From the batch's submission to its last move completing, as the observer saw it: without the tool's own
    work after that (restoring throttles, a last read), which production does not multiply by the factor."""
    at, seconds = finished
    submitted = at - seconds
    copying = [m for m in batch.moves if m.adding]
    if not copying:
        return seconds
    last = max(min(seen.done_at.get(m.tp, at), at) for m in copying)
    return max(0.0, last - submitted)


def rolling_result(plan: Plan, scaling: Scaling, events: Events, seen: Observations,
                   latency: Latency = NO_LATENCY) -> BatchResult:
    """Rolling execution is one stream of moves: one row for all of them."""
    start = min((t for t, e in events if isinstance(e, RollingStarted)), default=None)
    ends = [t for t, e in events if isinstance(e, MoveDone)]
    moves = plan.moves
    finished = start is not None and len(ends) >= len(moves)
    measured = _unscaled(max(ends) - start, scaling, latency.one) if finished and start is not None else None
    merged = Batch(0, tuple(moves), plan.batches[0].throttle, plan.batches[0].estimate) if plan.batches else None
    estimate = plan.summary.lower_bound_seconds or plan.summary.estimated_seconds  # rolling aims at the bound
    row = BatchResult(0, len(moves), sum(m.copied_bytes for m in moves), estimate, measured,
                      0.0 if start is not None else None, merged.throttle.rate if merged else None,
                      stalls=[e.text for _t, e in events if isinstance(e, Stalled)])
    if start is not None:
        row.urp_seconds = round(scaling.production_seconds(seen.urp_seconds(start, max(ends, default=start))), 1)
        if merged is not None:
            _slowest(row, merged, seen, scaling, start)
    row.unfinished = [str(m.tp) for m in moves if m.tp not in seen.done_at]
    return row


def _peak(row: BatchResult, batch: Batch) -> None:
    """The destination that took the most bytes, at the rate the measured duration implies."""
    incoming = Counter({b: n for b, n in batch.estimate.bytes_in.items()})
    if not incoming or not row.measured_seconds:
        return
    broker, count = max(incoming.items(), key=lambda kv: (kv[1], -kv[0]))
    row.peak_broker, row.peak_rate = broker, round(count / row.measured_seconds, 1)


def _slowest(row: BatchResult, batch: Batch, seen: Observations, scaling: Scaling, start: float | None) -> None:
    finished = [(seen.done_at[m.tp], m) for m in batch.moves if m.tp in seen.done_at]
    if not finished or start is None:
        return
    at, move = max(finished, key=lambda x: (x[0], str(x[1].tp)))
    row.slowest = f"{move.tp} ({duration(scaling.production_seconds(at - start))})"
    largest = max(batch.moves, key=lambda m: m.copied_bytes)
    ports = Counter({b: n for b, n in batch.estimate.bytes_in.items() if b in move.adding})
    if move is largest or move.copied_bytes == largest.copied_bytes:
        row.slowest_why = f"the largest move of the batch ({format_size(move.copied_bytes)})"
    elif ports:
        broker, count = max(ports.items(), key=lambda kv: kv[1])
        row.slowest_why = f"its new replica on broker {broker}, which receives {format_size(count)} in this batch"
    else:
        row.slowest_why = "it started last"


def _name(b: BatchResult) -> str:
    return "the rolling run" if b.index == 0 else f"batch {b.index}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.0%}"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
