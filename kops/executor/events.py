"""What an execution reports as it runs: one frozen value per kind of event, given to the executor's reporter.

Consumers (the CLI's rendering, `kops rehearse` and its report) match on these types. `to_json()` is the line
`kops apply --format json` writes for each, `{"event": NAME, ...fields}`, the shape docs/apply.md documents;
a field's name is its JSON key, and a change to either is a change to that format.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class Event:
    """The base of every event: `name` is its JSON `event` value."""

    name: ClassVar[str]

    def to_json(self) -> dict[str, Any]:
        return {"event": self.name, **asdict(self)}


Reporter = Callable[[Event], None]


@dataclass(frozen=True)
class Message(Event):
    """Something the operator should know that changes nothing by itself (a plan edited by hand, a rate changed,
    batches instead of rolling, a cancellation under way)."""

    name: ClassVar[str] = "message"
    text: str


@dataclass(frozen=True)
class Step(Event):
    """A change outside the moves done: a topic created or deleted, a config written, an election."""

    name: ClassVar[str] = "step"
    text: str


@dataclass(frozen=True)
class Resumed(Event):
    name: ClassVar[str] = "resume"
    execution: str
    kind: str  # apply or rollback


@dataclass(frozen=True)
class Started(Event):
    name: ClassVar[str] = "start"
    execution: str
    kind: str
    batches: int
    mode: str  # batches or rolling
    partitions: int
    bytes: int


@dataclass(frozen=True)
class Done(Event):
    name: ClassVar[str] = "done"
    execution: str


@dataclass(frozen=True)
class Stopped(Event):
    """Stopped at a checkpoint (exit 3): `reason` is also the record's."""

    name: ClassVar[str] = "stopped"
    execution: str
    reason: str


@dataclass(frozen=True)
class LostLock(Event):
    """Another kops holds the cluster now: nothing more is written, the record is the new holder's."""

    name: ClassVar[str] = "lock_lost"
    execution: str
    reason: str


@dataclass(frozen=True)
class BatchStarted(Event):
    name: ClassVar[str] = "batch_start"
    batch: int
    batches: int
    partitions: int
    bytes: int
    estimate_seconds: float | None
    reattached: bool  # the batch was in flight from an earlier run


@dataclass(frozen=True)
class BatchProgressed(Event):
    """A poll of the batch in flight; `overall_*` over the whole execution, `overall_eta` left out of the JSON
    until there is a rate."""

    name: ClassVar[str] = "progress"
    batch: int
    batches: int
    partitions: int
    done: int
    bytes_total: int
    bytes_done: int
    elapsed: float
    rate: float | None
    eta: float | None
    overall_bytes_total: int
    overall_bytes_done: int
    overall_eta: float | None = None

    def to_json(self) -> dict[str, Any]:
        doc = super().to_json()
        if self.overall_eta is None:
            del doc["overall_eta"]
        return doc


@dataclass(frozen=True)
class BatchDone(Event):
    name: ClassVar[str] = "batch_done"
    batch: int
    batches: int
    seconds: float


@dataclass(frozen=True)
class Stalled(Event):
    """One partition stuck, and why (batch 0 in a rolling execution); a Stopped follows."""

    name: ClassVar[str] = "stalled"
    batch: int
    text: str


@dataclass(frozen=True)
class CapacityUnknown(Event):
    """Brokers about to receive replicas whose usable bytes the cluster does not report now (ZooKeeper without
    KIP-179, Kafka before 3.3, an offline log dir) or that could not be read: their disks are not checked before
    moves (kops.executor.disks). Said once per broker in a run."""

    name: ClassVar[str] = "capacity_unknown"
    brokers: tuple[int, ...]
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"event": self.name, "brokers": list(self.brokers), "reason": self.reason}


@dataclass(frozen=True)
class OrderRestored(Event):
    """After a cancellation (kops.executor.order): how many partitions went back to their original replicas,
    which kops put back in order, which got their preferred leader elected, and which it left (one line each)."""

    name: ClassVar[str] = "order_restored"
    partitions: int
    reordered: tuple[str, ...]
    elected: tuple[str, ...]
    left: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"event": self.name, "partitions": self.partitions, "reordered": list(self.reordered),
                "elected": list(self.elected), "left": list(self.left)}


@dataclass(frozen=True)
class RollingStarted(Event):
    name: ClassVar[str] = "rolling_start"
    moves: int
    max_moves_per_broker: int
    max_moves: int | None


@dataclass(frozen=True)
class MoveStarted(Event):
    name: ClassVar[str] = "move_start"
    topic: str
    partition: int
    bytes: int
    in_flight: int  # moves in flight, this one included


@dataclass(frozen=True)
class MoveProgress:
    """One move in flight of a rolling execution (a part of RollingProgressed, not an event)."""

    topic: str
    partition: int
    bytes_done: int
    bytes_total: int
    eta: float | None


@dataclass(frozen=True)
class RollingProgressed(Event):
    """A poll of a rolling execution: the whole execution, and each move in flight."""

    name: ClassVar[str] = "progress"
    partitions: int
    done: int
    in_flight: tuple[MoveProgress, ...]
    bytes_total: int
    bytes_done: int
    elapsed: float
    rate: float | None
    eta: float | None
    overall_bytes_total: int
    overall_bytes_done: int

    def to_json(self) -> dict[str, Any]:
        doc = super().to_json()
        doc.update(mode="rolling", in_flight=[asdict(m) for m in self.in_flight])
        return doc


@dataclass(frozen=True)
class MoveDone(Event):
    name: ClassVar[str] = "move_done"
    topic: str
    partition: int
    seconds: float
