"""Absent brokers and how long they have been gone: what `kops rebalance --heal-after` decides on (issue 38).

A broker is absent when a partition's replica list names it and it is not registered (not among the snapshot's
live brokers: no `/brokers/ids/<id>`, or left out of Metadata, fenced in KRaft). One that holds no replica has
nothing to heal and is not counted. Since when is kept in the cluster by the port (`RecordStore.note_absent`,
docs/design/healing.md §1), timed by the cluster's own clock; this module only reads the times it returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kops.model.snapshot import Snapshot


@dataclass(frozen=True)
class Absence:
    """One absent broker: first seen absent and the store's time now, both in ms by the cluster's clock."""

    broker: int
    first_seen_ms: int
    now_ms: int

    @property
    def seconds(self) -> float:
        return max(0, self.now_ms - self.first_seen_ms) / 1000


def absent_brokers(snapshot: Snapshot) -> frozenset[int]:
    """Brokers a replica list names that are not registered (what must be re-homed if they stay away)."""
    live = snapshot.live_broker_ids
    return frozenset(b for t in snapshot.topics.values() for p in t.partitions.values() for b in p.replicas
                     if b not in live)


def absences(first_seen: Mapping[int, int], now_ms: int) -> tuple[Absence, ...]:
    """The noted brokers as absences, by broker id."""
    return tuple(Absence(b, first_seen[b], now_ms) for b in sorted(first_seen))


def due(found: tuple[Absence, ...], after_seconds: float) -> tuple[Absence, ...]:
    """The absences long enough to heal."""
    return tuple(a for a in found if a.seconds >= after_seconds)


def described(found: tuple[Absence, ...], after_seconds: float | None = None) -> str:
    """'broker 3 absent for 42 s (heals after 60 s)', for the one line a refusal says."""
    if not found:
        return "no broker absent"
    then = "" if after_seconds is None else f" (heals after {after_seconds:g} s)"
    return ", ".join(f"broker {a.broker} absent for {a.seconds:.0f} s" for a in found) + then
