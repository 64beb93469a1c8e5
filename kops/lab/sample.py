"""A small, realistic cluster as data: the demo's static cluster and the reader's integration fixture.

Six brokers in three racks (broker 7 once hosted `legacy` and is gone), and the situations a snapshot must
read correctly: a topic mid-reassignment (topic znode with adding/removing plus the reassignment znode),
replication throttles on topics and brokers (an operator's `*` among them), a pending deletion, an offline
partition, an under-replicated one, and a v1-era broker registration mixed with v5 ones.
"""

from __future__ import annotations

from collections.abc import Sequence

from kops.model.brokers import Broker
from kops.model.partitions import Partition, PartitionState, TopicPartition
from kops.model.snapshot import ControllerInfo, RequestedMove, Snapshot
from kops.model.topics import Topic

CLUSTER_ID = "kQKSmxAHRxiL5yEPdKUUpw"
CONTROLLER_EPOCH = 7


def _broker(broker_id: int, rack: str, version: int = 5) -> Broker:
    port = 9091 + broker_id
    return Broker(
        id=broker_id,
        host="127.0.0.1",
        port=port,
        endpoints=(f"PLAINTEXT://127.0.0.1:{port}",),
        rack=rack,
        listener_security_protocol_map={"PLAINTEXT": "PLAINTEXT"},
        timestamp="1763700000000",
        version=version,
    )


def _state(replicas: tuple[int, ...], leader: int | None = None, isr: tuple[int, ...] | None = None, epoch: int = 3):
    return PartitionState(
        leader=replicas[0] if leader is None else leader,
        leader_epoch=epoch,
        isr=replicas if isr is None else isr,
        controller_epoch=CONTROLLER_EPOCH,
    )


def _topic(name: str, layout: Sequence[tuple[int, ...]], config: dict[str, str] | None = None,
           topic_id: str | None = None):
    return Topic(
        name=name,
        partitions={p: Partition(replicas=r, state=_state(r)) for p, r in enumerate(layout)},
        topic_id=topic_id,
        config=config or {},
    )


def sample_snapshot() -> Snapshot:
    racks = {1: "rack-a", 2: "rack-b", 3: "rack-c", 4: "rack-a", 5: "rack-b", 6: "rack-c"}
    brokers = tuple(_broker(b, r, version=4 if b == 6 else 5) for b, r in racks.items())

    orders = _topic(
        "orders",
        [(1, 2, 3), (2, 3, 4), (3, 4, 5), (4, 5, 6), (5, 6, 1), (6, 1, 2)],
        {"retention.ms": "604800000", "min.insync.replicas": "2", "cleanup.policy": "delete"},
        topic_id="ZgLy5YjLS1y7j6B4v0xN3w",
    )
    # payments-1 moves from [2,3,1] to [4,5,6]: RS = target ++ original, adding = new, removing = old.
    moving = Partition(
        replicas=(4, 5, 6, 2, 3, 1),
        adding=(4, 5, 6),
        removing=(2, 3, 1),
        state=_state((2, 3, 1), leader=2, isr=(2, 3, 1, 4), epoch=5),
    )
    payments = Topic(
        name="payments",
        partitions={
            0: Partition((1, 2, 3), state=_state((1, 2, 3))),
            1: moving,
            2: Partition((3, 1, 2), state=_state((3, 1, 2), isr=(3, 1))),  # under-replicated
        },
        topic_id="3vVbRSnQT0Ky1cQm3C4nWQ",
        config={
            "leader.replication.throttled.replicas": "1:2,1:3,1:1",
            "follower.replication.throttled.replicas": "1:4,1:5,1:6",
        },
    )
    clicks = _topic(
        "clicks",
        [(b, b % 6 + 1) for b in range(1, 7)] * 2,
        {"leader.replication.throttled.replicas": "*"},  # an operator's own throttle
    )
    legacy = Topic(
        name="legacy",
        partitions={0: Partition((7,), state=_state((7,), leader=-1, isr=(7,)))},  # offline: broker 7 is gone
    )
    retired = _topic("retired-events", [(1, 2), (2, 3)])

    return Snapshot(
        cluster_id=CLUSTER_ID,
        controller=ControllerInfo(id=1, epoch=CONTROLLER_EPOCH),
        brokers=brokers,
        topics={t.name: t for t in (clicks, legacy, orders, payments, retired)},
        broker_configs={
            **{
                str(b): {"leader.replication.throttled.rate": "10485760",
                         "follower.replication.throttled.rate": "10485760"}
                for b in (1, 2, 3, 4, 5, 6)
            },
            "<default>": {"log.cleaner.threads": "2"},
        },
        requested_moves=(RequestedMove("payments", 1, (4, 5, 6)),),
        pending_deletions=("retired-events",),
        preferred_election=(TopicPartition("orders", 3),),
    )
