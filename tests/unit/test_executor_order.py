"""Pure decisions of the executor around a stop: what a cancellation leaves out of order (kops.executor.order)
and which partitions a health stop names (kops.executor.health). The real-Kafka side is in
tests/integration/test_admin_executor.py and test_executor.py."""

from __future__ import annotations

from kops.executor import health
from kops.executor.order import Restored, on_original_set, reorders, to_elect
from kops.model.brokers import Broker
from kops.model.partitions import Partition, PartitionState, TopicPartition
from kops.model.plan import Move
from kops.model.snapshot import ControllerInfo, RequestedMove, Snapshot
from kops.model.topics import Topic


def part(replicas: tuple[int, ...], leader: int, isr: tuple[int, ...], adding: tuple[int, ...] = (),
         removing: tuple[int, ...] = ()) -> Partition:
    return Partition(replicas, adding, removing, PartitionState(leader, 1, isr, 1))


def snapshot(parts: dict[int, Partition], brokers: tuple[int, ...] = (1, 2, 3, 4, 5),
             requested: tuple[RequestedMove, ...] = ()) -> Snapshot:
    return Snapshot("c1", ControllerInfo(1, 1), tuple(Broker(b, "localhost", 9092) for b in brokers),
                    {"pay": Topic("pay", parts)}, requested_moves=requested)


def test_a_cancelled_partition_out_of_order_gets_a_leader_only_move_to_its_original_order() -> None:
    moves = [Move("pay", 0, (3, 1), (4, 1, 2)), Move("pay", 1, (1, 2), (1, 2, 4)), Move("pay", 2, (3, 4, 1), (3, 1, 2))]
    snap = snapshot({0: part((1, 3), 3, (1, 3)), 1: part((1, 2), 1, (1, 2)), 2: part((1, 3, 4), 3, (1, 3))})
    todo, left = reorders(snap, moves)
    assert [(m.partition, m.from_replicas, m.to_replicas, m.bytes, m.kind) for m in todo] == [
        (0, (1, 3), (3, 1), 0, "leader")]  # pay-1 is in order already
    assert left == ["pay-2 stays [1, 3, 4] (original order [3, 4, 1]): broker 4 not in sync"]


def test_a_leader_only_move_completed_before_the_cancellation_stays_at_its_target() -> None:
    moves = [Move("pay", 0, (1, 2), (2, 1)), Move("pay", 1, (1, 2), (2, 1)), Move("pay", 2, (3, 1), (4, 1))]
    snap = snapshot({0: part((2, 1), 2, (1, 2)), 1: part((1, 2), 1, (1, 2)), 2: part((1, 3), 3, (1, 3))})
    assert [m.partition for m in moves if on_original_set(snap, m)] == [1, 2]


def test_only_partitions_in_their_original_order_whose_preferred_leader_is_in_sync_are_elected() -> None:
    moves = [Move("pay", p, (3, 1), (4, 1)) for p in range(4)]
    snap = snapshot({0: part((3, 1), 1, (1, 3)),  # preferred 3 in sync, not leading: elected
                     1: part((3, 1), 3, (1, 3)),  # led by its preferred leader already
                     2: part((3, 1), 1, (1,)),  # preferred 3 out of sync: Kafka would not elect it
                     3: part((1, 3), 1, (1, 3))})  # not in its original order (yet): the order comes first
    assert to_elect(snap, moves) == [TopicPartition("pay", 0)]


def test_what_the_cancellation_left_is_one_event() -> None:
    tp = TopicPartition("pay", 0)
    assert Restored([tp], [tp], [], ["x"]).event().to_json() == {"event": "order_restored", "partitions": 1,
                                                                 "reordered": ["pay-0"], "elected": [], "left": ["x"]}


def test_a_health_stop_names_the_partitions_of_the_batch_that_wait_on_the_departed_broker() -> None:
    moves = [Move("pay", p, (1, 2), (1, 5) if p != 3 else (1, 4)) for p in range(8)]
    parts = {p: part((1, 2, 5), 1, (1, 2), adding=(5,), removing=(2,)) for p in range(8)}
    parts[3] = part((1, 2, 4), 1, (1, 2, 4), adding=(4,), removing=(2,))  # waits on 4, which is alive
    parts[7] = part((1, 5), 1, (1,))  # completed before broker 5 left: not waiting
    snap = snapshot(parts, brokers=(1, 2, 3, 4))
    before = health.baseline(snap)
    assert health.problem(snap, moves, before) == (
        "broker 5 of the batch left the cluster; 6 partition(s) of the batch wait on it: "
        "pay-0, pay-1, pay-2, pay-4, pay-5, ... (first 5)")
    assert health.problem(snap, moves[:2], before) == (
        "broker 5 of the batch left the cluster; 2 partition(s) of the batch wait on it: pay-0, pay-1")


def test_a_departed_source_alone_names_no_partition() -> None:
    moves = [Move("pay", 0, (2, 1), (1, 3))]
    snap = snapshot({0: part((1, 3, 2), 1, (1,), adding=(3,), removing=(2,))}, brokers=(1, 3))
    assert health.problem(snap, moves, health.baseline(snap)) == "broker 2 of the batch left the cluster"
