"""The fleet's progress while clusters run: bytes copied of all, and an ETA over the schedule (docs/design/fleet.md).

What the ETA adds up, so it means what one cluster's ETA means:
- a running cluster's time left is its own execution's ETA (the executor's: the execution's bytes left over the
  rate its batch is copying at);
- a cluster not started yet takes its plan's bytes over the rate the running clusters copy at (their mean, per
  cluster), else its plan's estimate at its throttle;
- the clusters run `serial` at a time and a batch of clusters ends with its slowest, so the fleet's time left is
  the slowest of the batch running plus, for each batch after it, its slowest.
Unknown anywhere (a cluster with no rate yet and no estimate) is an unknown ETA, never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Seen:
    """A running cluster's last progress: its execution's bytes, the rate its moves copy at, its time left."""

    bytes_total: int
    bytes_done: int
    rate: float | None
    eta: float | None


@dataclass(frozen=True)
class Planned:
    """A cluster as its plan says: the bytes it copies and the plan's estimate."""

    bytes: int
    estimate: float | None


def rate_per_cluster(seen: Mapping[str, Seen]) -> float | None:
    """The mean rate of the running clusters that report one."""
    rates = [s.rate for s in seen.values() if s.rate]
    return sum(rates) / len(rates) if rates else None


def time_left(cluster: str, planned: Planned, seen: Mapping[str, Seen], finished: set[str],
              rate: float | None) -> float | None:
    """One cluster's seconds left: 0 once finished, its own ETA while running, else by bytes over `rate` (or the
    plan's estimate)."""
    if cluster in finished:
        return 0.0
    if cluster in seen:
        now = seen[cluster]
        return 0.0 if now.bytes_total and now.bytes_done >= now.bytes_total else now.eta
    if planned.bytes == 0:
        return planned.estimate if planned.estimate is not None else 0.0
    if rate:
        return planned.bytes / rate
    return planned.estimate


def fleet_eta(batches: Sequence[Sequence[str]], planned: Mapping[str, Planned], seen: Mapping[str, Seen],
              finished: set[str]) -> float | None:
    """Seconds until the last batch of clusters ends: each batch's slowest, added up; None when any is unknown."""
    rate = rate_per_cluster(seen)
    total = 0.0
    for batch in batches:
        lefts = [time_left(c, planned[c], seen, finished, rate) for c in batch]
        if any(left is None for left in lefts):
            return None
        total += max((left for left in lefts if left is not None), default=0.0)
    return total


def bytes_done(planned: Mapping[str, Planned], seen: Mapping[str, Seen], finished: set[str]) -> tuple[int, int]:
    """Bytes copied of all the fleet's, as far as the clusters have reported."""
    total = sum(p.bytes for p in planned.values())
    done = sum(planned[c].bytes if c in finished else seen[c].bytes_done if c in seen else 0 for c in planned)
    return min(done, total), total
