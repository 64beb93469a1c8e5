"""Tiered storage (KIP-405): a topic with `remote.storage.enable=true` keeps its older segments in remote storage,
and a new replica copies only the local log (from the local log start; KIP-1023 lets it start later still).

So a move's cost, its batch, its throttled duration and the estimates count the local size, which is what
DescribeLogDirs and kafka-log-dirs report and what the sizes summary's `bytes` holds, and disk balance counts it
too (it is what sits on the broker's disk). The remote part is carried beside it so the plan shows both: what
kops copies, and what a tool copying whole logs would add.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from kops.model.partitions import TopicPartition
from kops.model.plan import Move
from kops.model.snapshot import Snapshot
from kops.units import format_size

REMOTE_STORAGE = "remote.storage.enable"


def tiered_topics(snapshot: Snapshot) -> set[str]:
    return {name for name, t in snapshot.topics.items() if str(t.config.get(REMOTE_STORAGE, "")).lower() == "true"}


def annotate(moves: list[Move], snapshot: Snapshot, remote: Mapping[TopicPartition, int]) -> list[Move]:
    """Each data move of a tiered topic with its remote bytes (0 when the sizes do not say)."""
    tiered = tiered_topics(snapshot)
    if not tiered:
        return moves
    return [replace(m, remote_bytes=remote.get(m.tp, 0)) if m.topic in tiered and m.kind == "data" else m
            for m in moves]


def not_copied(moves: list[Move]) -> int | None:
    """Remote bytes the moves leave where they are, per new replica; None when no tiered topic moves."""
    tiered = [m for m in moves if m.remote_bytes is not None]
    return sum((m.remote_bytes or 0) * len(m.adding) for m in tiered) if tiered else None


def describe(moves: list[Move], remote_total: int | None) -> str | None:
    """The plan's tiered-storage line for reviewers, both sizes; None when no tiered topic moves."""
    tiered = [m for m in moves if m.remote_bytes is not None]
    if remote_total is None or not tiered:
        return None
    local = sum(m.copied_bytes for m in tiered)
    known = "" if all(m.remote_bytes for m in tiered) else (" (remote sizes unknown for some: give remote_bytes in "
                                                            "--sizes)")
    return (f"tiered storage (KIP-405): {len(tiered)} move(s) of tiered topics copy their local logs, "
            f"{format_size(local)}; {format_size(remote_total)} stay in remote storage, not copied{known}")
