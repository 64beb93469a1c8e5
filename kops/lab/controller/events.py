"""What the controller's watches and RPC handlers enqueue. Watches only enqueue; the event thread decides.

Events carry as little as possible (mostly nothing): the handler re-reads ZooKeeper when it runs, so a burst
of watch firings collapses into reads of the latest state, as in Kafka's ControllerEventManager.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Startup:
    """The broker started (or its session was re-established): take part in the controller election."""


@dataclass(frozen=True)
class Reelect:
    """/controller vanished: race to create it."""


@dataclass(frozen=True)
class ControllerChange:
    """/controller now names someone (maybe not us): resign if we were active and are no longer."""


@dataclass(frozen=True)
class Expire:
    """The ZooKeeper session was lost: resign, forget queued work, re-register."""


@dataclass(frozen=True)
class BrokerChange:
    """The children of /brokers/ids changed."""


@dataclass(frozen=True)
class TopicChange:
    """The children of /brokers/topics changed (topic created or removed)."""


@dataclass(frozen=True)
class PartitionModifications:
    """A topic znode's data changed: partitions may have been added."""

    topic: str


@dataclass(frozen=True)
class TopicDeletion:
    """The children of /admin/delete_topics changed."""


@dataclass(frozen=True)
class ReplicasDeleted:
    """Every replica of a topic being deleted answered StopReplica(delete)."""

    topic: str


@dataclass(frozen=True)
class ReassignmentRequested:
    """/admin/reassign_partitions was created (or changed)."""


@dataclass(frozen=True)
class CancelRequested:
    """/admin/cancel_reassignment_in_progress was created (KIP-236 cancel)."""


@dataclass(frozen=True)
class FreezeChanged:
    """/admin/reassign_cancel was created or deleted (KIP-236 freeze)."""


@dataclass(frozen=True)
class QueueChanged:
    """/admin/reassign_partitions_queue was created or changed (KIP-236 queue)."""


@dataclass(frozen=True)
class PreferredElectionRequested:
    """/admin/preferred_replica_election was created."""


@dataclass(frozen=True)
class IsrChanged:
    """Children appeared under /isr_change_notification."""


@dataclass(frozen=True)
class DrainCheck:
    """Time to ask leaders whether partitions marked for deletion have drained (KIP-253)."""


@dataclass(frozen=True, eq=False)
class ControlledShutdown:
    """A broker asks to leave: reply with how many partitions it still leads."""

    broker: int
    broker_epoch: int
    reply: Future = field(default_factory=Future)


Event = (Startup | Reelect | ControllerChange | Expire | BrokerChange | TopicChange | PartitionModifications
         | TopicDeletion | ReplicasDeleted | ReassignmentRequested | PreferredElectionRequested | IsrChanged
         | ControlledShutdown | CancelRequested | FreezeChanged | QueueChanged | DrainCheck)
