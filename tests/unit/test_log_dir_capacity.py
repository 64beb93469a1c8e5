"""A lab broker's log dir with a capacity, in one process: what fits, and the dir failing whole (KIP-112)."""

from __future__ import annotations

import pytest

from kops.errors import UsageError
from kops.lab.broker.disk import UNKNOWN_BYTES, LogDirDisk
from kops.lab.broker.replicas import ReplicaManager
from kops.lab.controller.effects import LeaderAndIsrEntry
from kops.lab.controller.wire import ControllerBatch
from kops.lab.kops_engine import disk_capacities
from kops.model.partitions import TopicPartition
from kops.rpc import RpcError
from tests.unit.test_broker_replicas import TP, FakeClock, fetch_round

TP1 = TopicPartition("t", 1)


def broker(broker_id: int, clock: FakeClock, capacity: int | None, failures: list[str]) -> ReplicaManager:
    """Replicas of t-0 (led by 1) and t-1 (led by 2) on brokers 1 and 2, this one's dir holding `capacity`."""
    rm = ReplicaManager(broker_id, clock, None, disk=LogDirDisk(f"/d{broker_id}", capacity))  # type: ignore[arg-type]  # no ZooKeeper here
    rm.on_dir_failure = failures.append
    rm.handle_controller_batch(ControllerBatch(1, 5, [LeaderAndIsrEntry(TP, 1, 0, (1,), (1, 2), 0, True),
                                                      LeaderAndIsrEntry(TP1, 2, 0, (2,), (2, 1), 0, True)]))
    return rm


def test_usable_bytes_are_the_capacity_minus_every_replicas_bytes() -> None:
    failures: list[str] = []
    rm = broker(1, FakeClock(), 1000, failures)
    rm.append(TP, 600)
    disk, held, sizes = rm.log_dir()
    assert (held, disk.total_bytes(), disk.usable_bytes(held)) == (600, 1000, 400)
    assert sizes == [(TP, 600, 0), (TP1, 0, 0)]
    rm.append(TP, 400)  # exactly full is not over
    assert rm.log_dir()[1] == 1000 and failures == []
    unlimited = broker(1, FakeClock(), None, failures).disk
    assert unlimited.total_bytes() == unlimited.usable_bytes(10**12) == UNKNOWN_BYTES


def test_a_produce_that_does_not_fit_fails_the_dir_and_every_replica_in_it() -> None:
    failures: list[str] = []
    rm = broker(1, FakeClock(), 1000, failures)
    rm.append(TP, 600)
    with pytest.raises(RpcError, match="KafkaStorageException.*No space left on device"):
        rm.append(TP, 401)
    assert rm.replicas[TP].log.end == 600  # a write that does not fit fails whole
    assert len(failures) == 1 and "401 bytes, 400 of 1000 bytes free in /d1" in failures[0]
    assert not any(r.online for r in rm.replicas.values()) and not rm.leading and not rm.followed
    assert rm.disk.total_bytes() == UNKNOWN_BYTES
    with pytest.raises(RpcError, match="not the leader"):
        rm.append(TP, 1)
    # the controller's LeaderAndIsr cannot bring them back: KAFKA_STORAGE_ERROR, as Kafka answers
    reply = rm.handle_controller_batch(ControllerBatch(1, 6, [LeaderAndIsrEntry(TP, 1, 1, (1, 2), (1, 2), 1)]))
    assert reply["storage_errors"] == ["t-0"] and not rm.replicas[TP].online and len(failures) == 1


def test_a_follower_copy_that_does_not_fit_fails_the_followers_dir() -> None:
    clock = FakeClock()
    failures: list[str] = []
    leader, follower = broker(1, clock, None, failures), broker(2, clock, 4000, [])
    follower.on_dir_failure = lambda why: failures.append(f"follower: {why}")
    follower.append(TP1, 1000)  # what it leads counts too
    leader.append(TP, 3500)
    clock.t = 1.0
    assert fetch_round(leader, follower) == 0
    assert failures == ["follower: No space left on device: the fetch of t-0 from broker 1 needs 3500 bytes, "
                        "3000 of 4000 bytes free in /d2"]
    assert follower.replicas[TP].log.end == 0 and follower.fetch_plan(1)[0] == []  # its fetcher has nothing to do
    assert leader.disk.online


def test_ingest_that_does_not_fit_fails_the_dir_at_the_tick() -> None:
    clock = FakeClock()
    failures: list[str] = []
    rm = broker(1, clock, 10_000, failures)
    rm.topic_counts["t"] = (2, 2)
    rm.ingest = {"t": 2000.0}  # t-0 gets its share of the keys, about 1000 bytes per simulated second
    rm.tick()
    ends = []
    while not failures and clock.t < 100:
        ends.append(rm.replicas[TP].log.end)
        clock.t += 1.0
        rm.tick()
    assert len(failures) == 1 and "ingest into t-0" in failures[0]
    assert rm.replicas[TP].log.end == ends[-1] and 9000 < ends[-1] <= 10_000  # the tick that did not fit wrote nothing


def test_bad_disk_capacity_options_are_refused_in_one_line() -> None:
    """`kops lab up --disk-capacity`: SIZE for all, ID=SIZE for one; anything else is refused before a start."""
    for values, message in ((["2GiB", "4=1GiB"], "no broker 4 in this lab"), (["x=1GiB"], "no broker x"),
                            (["2GiB", "1GiB"], "already given"), (["1=1GiB", "1=2GiB"], "broker 1 was given"),
                            (["0"], "at least one byte"), (["lots"], "not a size")):
        with pytest.raises(UsageError, match=message):
            disk_capacities(values, [1, 2, 3])
    assert disk_capacities(["2GiB", "3=1GiB"], [1, 2, 3]) == {1: 2 << 30, 2: 2 << 30, 3: 1 << 30}
    assert disk_capacities(["2=500MB"], [1, 2, 3]) == {2: 500_000_000} and disk_capacities([], [1]) == {}
