"""How a rehearsal shrinks production into a lab: one factor F, production seconds per clone second.

A batch's duration is its bytes over the rate they move at, so dividing bytes by S and rates by R divides its
duration by F = S / R, and a clone second measured times F is a production second. The kops engine simulates
bytes, so it keeps production's rates (R = 1) and runs its clock up to `MAX_TIME_SCALE` times faster; what is
left of F divides the bytes. Its brokers are processes of this machine, and every broker fetches from every other,
so a clone's work grows with the square of its brokers: beyond what the machine's cores carry at full speed, its
clock runs slower than wall time (slow motion: its brokers' rounds stretch with it) and the bytes shrink by as
much more, so F, and the rehearsal's length, stay as chosen. Real Kafka moves real bytes on this machine: its throttle
is the lab's rate (R =
production throttle / lab rate) and the bytes shrink by F·R. Background traffic scales with the rates, so the
share of the throttle it takes is production's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kops.errors import UsageError
from kops.model.plan import Batch, Estimate, Move, Plan, Rollback, Summary

TARGET_SECONDS = 300.0  # the default rehearsal takes about five minutes at the plan's throttle
MAX_TIME_SCALE = 10.0  # the kops engine's clock speed-up beyond which its timing gets coarse
REAL_RATE = 2 * 1024 * 1024  # bytes/s per broker a real-Kafka clone replicates at on a small machine
# (leader, follower) broker pairs one core carries at full speed: 24 brokers per two cores, the largest clone
# measured to keep its followers in the ISR at full speed; 50 on two cores starved (bench/RESULTS.md)
FULL_SPEED_PAIRS_PER_CORE = 276


@dataclass(frozen=True)
class Scaling:
    factor: float  # production seconds per clone (wall) second
    time_scale: float  # the kops engine's simulated seconds per wall second (1 on real Kafka)
    bytes_divisor: float  # production bytes per clone byte
    rate_divisor: float  # production rate per clone rate (throttle and background traffic)
    throttle: int | None  # the clone's throttle per broker, bytes per clone-engine second
    slow_motion: bool = False  # the machine, not F, set the clock below wall time (`machine_time_scale`)

    def clone_bytes(self, production: int) -> int:
        return max(1, round(production / self.bytes_divisor)) if production > 0 else 0

    def clone_rate(self, production: float) -> float:
        return production / self.rate_divisor

    def production_seconds(self, clone_wall_seconds: float) -> float:
        return clone_wall_seconds * self.factor

    def as_dict(self) -> dict[str, object]:
        return {"factor": round(self.factor, 3), "time_scale": self.time_scale,
                "bytes_divisor": round(self.bytes_divisor, 3), "rate_divisor": round(self.rate_divisor, 3),
                "throttle": self.throttle}


def machine_time_scale(brokers: int, cores: int) -> float:
    """The fastest clock a kops-engine clone of `brokers` runs at on `cores` cores: 1, or slow motion beyond
    what the cores carry at full speed."""
    pairs = brokers * (brokers - 1)
    return 1.0 if pairs <= 0 else min(1.0, FULL_SPEED_PAIRS_PER_CORE * max(1, cores) / pairs)


def choose(plan: Plan, real: bool, factor: float | None = None, real_rate: int = REAL_RATE,
           machine: float = 1.0) -> Scaling:
    """The scaling for `plan`: `factor` if given, else the one that makes the rehearsal about five minutes;
    the kops engine's clock no faster than `machine` when that is below 1 (`machine_time_scale`)."""
    estimate = plan.summary.estimated_seconds
    if not estimate:
        raise UsageError("the plan carries no duration estimate, so there is nothing to rehearse it against",
                         hint="make the plan with partition sizes (kops plan --sizes FILE) and a throttle")
    if factor is None:
        factor = max(1.0, estimate / TARGET_SECONDS)
    if factor <= 0:
        raise UsageError(f"--scale must be positive, not {factor:g}")
    rate = plan.throttle_rate
    if real:
        rate_divisor = max(1.0, (rate or 0) / real_rate) if rate else 1.0
        clone_rate = round(rate / rate_divisor) if rate else real_rate
        return Scaling(factor, 1.0, factor * rate_divisor, rate_divisor, clone_rate)
    time_scale = min(MAX_TIME_SCALE, factor)
    # slow motion (a faster clock costs the machine nothing more: the brokers' rhythm keeps wall time)
    slow_motion = machine < min(1.0, time_scale)
    time_scale = min(time_scale, machine) if slow_motion else time_scale
    return Scaling(factor, time_scale, factor / time_scale, 1.0, rate, slow_motion)


def clone_plan(plan: Plan, cluster_id: str | None, scaling: Scaling) -> Plan:
    """The plan as the clone runs it: its cluster id, bytes and estimates in the clone's units; all else equal
    (the fingerprint's topics and brokers must hold on the clone as on production)."""
    fingerprint = {**plan.fingerprint, "cluster_id": cluster_id}
    return replace(plan, cluster_id=cluster_id, connect=None, fingerprint=fingerprint,
                   batches=tuple(_batch(b, scaling) for b in plan.batches),
                   rollback=_rollback(plan.rollback, scaling), summary=_summary(plan.summary, scaling))


def _move(m: Move, s: Scaling) -> Move:
    return replace(m, bytes=s.clone_bytes(m.bytes))


def _seconds(value: float | None, s: Scaling) -> float | None:
    return None if value is None else value / s.factor


def _batch(b: Batch, s: Scaling) -> Batch:
    e = b.estimate
    estimate = Estimate(_seconds(e.seconds, s), _seconds(e.lower_bound_seconds, s),
                        {k: s.clone_bytes(v) for k, v in e.bytes_in.items()},
                        {k: s.clone_bytes(v) for k, v in e.bytes_out.items()})
    return replace(b, moves=tuple(_move(m, s) for m in b.moves), estimate=estimate)


def _rollback(r: Rollback, s: Scaling) -> Rollback:
    return replace(r, batches=tuple(_batch(b, s) for b in r.batches))


def _summary(x: Summary, s: Scaling) -> Summary:
    return replace(x, bytes=s.clone_bytes(x.bytes),
                   lower_bound_bytes=s.clone_bytes(x.lower_bound_bytes),
                   estimated_seconds=_seconds(x.estimated_seconds, s),
                   lower_bound_seconds=_seconds(x.lower_bound_seconds, s),
                   bytes_before={k: s.clone_bytes(v) for k, v in x.bytes_before.items()},
                   bytes_after={k: s.clone_bytes(v) for k, v in x.bytes_after.items()})
