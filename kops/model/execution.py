"""The record of one run of `kops apply` or `kops rollback`, as pure data: what `--resume`, `kops status` and
`kops rollback` need (the original replica lists of every move, in order, and every config value kops replaced).

The executor keeps it and writes it (kops/executor/record.py, as kops/formats/record.py declares it); it lives
in the model because the declaration names it, and the formats sit below the executor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kops.model.partitions import TopicPartition
from kops.model.plan import DiskMove, Move, Rolling

PENDING, RUNNING, DONE, CANCELLED = "pending", "running", "done", "cancelled"  # batch states
STOPPED, FAILED = "stopped", "failed"  # execution states besides RUNNING and DONE


@dataclass
class BatchRecord:
    index: int
    moves: list[Move]
    status: str = PENDING
    estimate_seconds: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    progress_at: float | None = None  # the last time the batch moved (stall detection, kops status)
    disk_moves: list[DiskMove] = field(default_factory=list)  # replicas to another dir of their broker, after moves
    caps: dict[int, int] = field(default_factory=dict)  # broker -> most its follower rate may be (the plan's caps)
    undo_caps: dict[int, int] = field(default_factory=dict)  # the same for the batch that rolls this one back

    @property
    def tps(self) -> set[TopicPartition]:
        return {m.tp for m in self.moves}


@dataclass
class CordonRecord:
    """`cordoned.log.dirs` of one broker as kops found it (None: not set) and as kops wrote it, before the first
    batch of a drain (KIP-1066): what the rollback restores, unless someone changed it since."""

    broker: int
    before: str | None
    after: str


@dataclass
class ConfigRecord:
    """A config change kops made (not throttles): the map before and after, for rollback."""

    entity_type: str
    entity: str
    before: dict[str, str]
    after: dict[str, str]


@dataclass
class ExecutionRecord:
    id: str
    kind: str  # apply | rollback
    plan_digest: str
    plan_path: str
    cluster_id: str | None
    started_at: float
    holder: dict[str, Any]
    batches: list[BatchRecord]
    rate: int | None = None  # throttle rate, bytes/s per broker; None = unthrottled
    of: str | None = None  # rollback: the execution it undoes
    status: str = RUNNING
    stop_reason: str | None = None
    updated_at: float = 0.0
    steps_done: list[str] = field(default_factory=list)  # non-move changes done: "create:t", "config:topics/t", ...
    configs: list[ConfigRecord] = field(default_factory=list)
    # throttle keys kops changed: "topics/t" or "brokers/1" -> {key: value found before (None = absent)}
    throttles_before: dict[str, dict[str, str | None]] = field(default_factory=dict)
    throttles_written: dict[str, dict[str, str]] = field(default_factory=dict)  # what kops last wrote there
    election: list[TopicPartition] = field(default_factory=list)
    election_done: bool = False
    irreversible: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)  # plan sections edited by hand, run with --accept-edited-plan
    rolling: Rolling | None = None  # rolling execution: one "batch" per move, several in flight at once
    cordons: list[CordonRecord] = field(default_factory=list)  # apply: set; rollback: to restore (KIP-1066)

    def batch(self, index: int) -> BatchRecord:
        return next(b for b in self.batches if b.index == index)

    @property
    def current(self) -> BatchRecord | None:
        """The batch in flight (or interrupted in flight), if any; the first of them in a rolling execution."""
        return next((b for b in self.batches if b.status == RUNNING), None)

    @property
    def in_flight(self) -> list[BatchRecord]:
        """Every batch in flight (in a rolling execution each holds one move; otherwise at most one)."""
        return [b for b in self.batches if b.status == RUNNING]

    @property
    def finished(self) -> bool:
        return self.status == DONE


def joined(batches: list[BatchRecord]) -> BatchRecord:
    """Batches as one, for what looks at all their moves at once (a rolling execution's moves in flight)."""
    return BatchRecord(0, [m for b in batches for m in b.moves], RUNNING)
