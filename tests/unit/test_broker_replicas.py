"""The lab broker's replica logic in one process: two replica managers exchanging fetches directly."""

from __future__ import annotations

import threading

import pytest

from kops.jsondoc import dumps_compact
from kops.lab.broker import replicas
from kops.lab.broker.clock import SimClock
from kops.lab.broker.quotas import RateLimiter
from kops.lab.broker.replicas import ReplicaManager
from kops.lab.broker.simlog import SimulatedLog
from kops.lab.broker.throttles import ALL, Throttles, parse_rate, throttled_partitions
from kops.lab.controller.effects import BrokerRequests, LeaderAndIsrEntry
from kops.lab.controller.wire import BrokerAddress, ControllerBatch, decode_batch, encode_batch
from kops.model.partitions import PartitionState, TopicPartition
from kops.rpc import RpcError
from kops.zk_layout.codecs.partition_state import encode_partition_state

TP = TopicPartition("t", 0)


class FakeClock:
    """Simulated time under the test's control."""

    def __init__(self) -> None:
        self.t = 0.0
        self.scale = 1.0
        self.stretch = 1.0

    def now(self) -> float:
        return self.t


def pair(rate: float | None = None) -> tuple[FakeClock, ReplicaManager, ReplicaManager]:
    clock = FakeClock()
    leader, follower = ReplicaManager(1, clock, None), ReplicaManager(2, clock, None)  # type: ignore[arg-type]  # no ZooKeeper in this unit test
    for rm in (leader, follower):
        rm.handle_controller_batch(ControllerBatch(1, 5, [LeaderAndIsrEntry(TP, 1, 0, (1,), (1, 2), 0, True)]))
    return clock, leader, follower


def fetch_round(leader: ReplicaManager, follower: ReplicaManager) -> int:
    plan, _generation = follower.fetch_plan(1)
    return follower.apply_fetch(plan, leader.handle_fetch({"replica_id": 2, "partitions": plan}))


def test_throttle_lists_keep_only_this_brokers_entries() -> None:
    assert throttled_partitions("0:1, 1:2,2:1,", 1) == {0, 2}
    assert throttled_partitions(" * ", 1) == ALL
    assert throttled_partitions("", 1) == set() and throttled_partitions(None, 1) == set()
    assert parse_rate("1048576") == 1048576.0 and parse_rate(str(2**63 - 1)) is None and parse_rate("x") is None
    t = Throttles(2)
    t.update_topic("t",
                   {"leader.replication.throttled.replicas": "0:2", "follower.replication.throttled.replicas": "*"})
    assert t.leader_throttled("t", 0) and not t.leader_throttled("t", 1) and t.follower_throttled("t", 9)


def test_rate_limiter_meets_its_rate_and_returns_unused() -> None:
    limiter = RateLimiter(100.0, burst_seconds=1.0)
    assert limiter.take(1000, 0.0) == 0
    assert limiter.take(1000, 0.5) == 50
    assert limiter.take(1000, 10.0) == 100  # the bucket holds one second
    limiter.give_back(30)
    assert limiter.take(1000, 10.0) == 30
    assert RateLimiter(None).take(12345, 0.0) == 12345


def test_log_retention_by_bytes_and_by_time() -> None:
    log = SimulatedLog(checkpoint_every=10.0)
    for second in range(0, 100, 10):
        log.append(1000, float(second))
    log.hw = log.end
    assert log.apply_retention(100.0, -1, 4000) == 6000 and log.size == 4000
    assert log.apply_retention(100.0, 25_000, -1) > 0 and log.start == 8000  # appended before t=75 is gone
    assert log.end == 10000


def test_follower_catches_up_and_joins_the_isr() -> None:
    clock, leader, follower = pair()
    leader.append(TP, 5000)
    clock.t = 1.0
    assert fetch_round(leader, follower) == 5000
    assert follower.replicas[TP].log.end == 5000
    fetch_round(leader, follower)  # the fetch at the log end proves it caught up
    updates = leader.take_isr_updates()
    assert [(u.tp, u.isr, u.zk_version) for u in updates] == [(TP, (1, 2), 0)]
    leader.isr_written(updates[0], 1)
    assert leader.replicas[TP].state.isr == (1, 2) and leader.replicas[TP].state.zk_version == 1


def test_a_seeded_follower_is_in_sync_without_copying() -> None:
    """A rehearsal's clone: the leader's bytes appended, its followers brought to the same end at once."""
    _clock, leader, follower = pair()
    leader.append(TP, 5000)
    assert follower.seed_followers([["t", 0, 5000], ["t", 9, 5000]]) == [["t", 9]]  # not a replica of t-9
    assert leader.seed_followers([["t", 0, 5000]]) == [["t", 0]]  # the leader is not its own follower
    assert follower.replicas[TP].log.end == 5000
    assert fetch_round(leader, follower) == 0  # nothing to copy: its first fetch is at the log end
    assert [u.isr for u in leader.take_isr_updates()] == [(1, 2)]


def test_a_slowed_clock_stretches_the_brokers_rhythm_and_a_faster_one_does_not() -> None:
    assert SimClock(0.25).stretch == 4.0 and SimClock(1.0).stretch == SimClock(10.0).stretch == 1.0


def test_leader_and_follower_throttles_limit_an_out_of_sync_follower() -> None:
    clock, leader, follower = pair()
    leader.append(TP, 10_000_000)
    leader.throttles.update_topic("t", {"leader.replication.throttled.replicas": "0:1"})
    leader.leader_quota.set_rate(1000.0)
    fetch_round(leader, follower)  # learns the leader's end; the bucket starts empty
    for second in range(1, 11):
        clock.t = float(second)
        fetch_round(leader, follower)
    assert follower.replicas[TP].log.end == 10 * 1000  # 1000 bytes per simulated second
    follower.throttles.update_topic("t", {"follower.replication.throttled.replicas": "0:2"})
    follower.follower_quota.set_rate(100.0)
    before = follower.replicas[TP].log.end
    for second in range(11, 21):
        clock.t = float(second)
        fetch_round(leader, follower)
    assert follower.replicas[TP].log.end - before <= 100 * 10 + 100  # the lower of the two rates wins


def test_lagging_follower_leaves_the_isr_after_the_lag_window() -> None:
    clock, leader, follower = pair()
    leader.handle_controller_batch(ControllerBatch(1, 5, [LeaderAndIsrEntry(TP, 1, 1, (1, 2), (1, 2), 1)]))
    leader.append(TP, 100)
    clock.t = 31.0  # the follower never fetched
    leader.tick()
    assert [u.isr for u in leader.take_isr_updates()] == [(1,)]


def test_a_follower_of_a_log_that_grows_between_every_two_fetches_stays_in_the_isr() -> None:
    """Its fetch offset is never the log end, but always the end as of its previous fetch (Kafka's rule)."""
    clock, leader, follower = pair()
    leader.handle_controller_batch(ControllerBatch(1, 5, [LeaderAndIsrEntry(TP, 1, 1, (1, 2), (1, 2), 1)]))
    follower.handle_controller_batch(ControllerBatch(1, 5, [LeaderAndIsrEntry(TP, 1, 1, (1, 2), (1, 2), 1)]))
    shrinks: list = []
    for second in range(1, 100):
        leader.append(TP, 100)
        clock.t = float(second)
        fetch_round(leader, follower)
        leader.tick()
        shrinks += [u.isr for u in leader.take_isr_updates()]
    assert leader.replicas[TP].followers[2].leo == 9900 - 100  # never at the log end when it fetches
    assert shrinks == []
    for second in range(100, 140):  # the same follower, stopped: it leaves after the lag window
        leader.append(TP, 100)
        clock.t = float(second)
        leader.tick()
        for update in leader.take_isr_updates():
            leader.isr_written(update, update.zk_version + 1)
            shrinks.append((second, update.isr))
    assert shrinks in ([(129, (1,))], [(130, (1,))])  # 30 s after it was last caught up


def _in_sync_pair(monkeypatch: pytest.MonkeyPatch) -> tuple[ReplicaManager, ReplicaManager]:
    """A leader and a caught-up follower in its ISR, whose idle fetch could park for minutes."""
    monkeypatch.setattr(replicas, "MAX_FETCH_WAIT", 600.0)
    clock = FakeClock()
    leader = ReplicaManager(1, clock, None, lag_max=10_000.0)  # type: ignore[arg-type]  # no ZooKeeper here
    follower = ReplicaManager(2, clock, None, lag_max=10_000.0)  # type: ignore[arg-type]  # as above
    in_sync = ControllerBatch(1, 5, [LeaderAndIsrEntry(TP, 1, 1, (1, 2), (1, 2), 1)])
    for rm in (leader, follower):
        rm.handle_controller_batch(in_sync)
    leader.append(TP, 100)
    fetch_round(leader, follower)
    fetch_round(leader, follower)
    assert follower.take_gained() == {1: 1}
    return leader, follower


def _parked_fetch(leader: ReplicaManager, plan: list, generation: int) -> tuple[threading.Thread, list[dict]]:
    answers: list[dict] = []
    body = {"replica_id": 2, "partitions": plan, "generation": generation, "max_wait": 600.0}
    thread = threading.Thread(target=lambda: answers.append(leader.handle_fetch(body)), daemon=True)
    thread.start()
    return thread, answers


def test_a_parked_fetch_answers_when_its_follower_is_given_another_partition(monkeypatch) -> None:
    """An idle follower's fetch waits at the leader; a partition it starts following there must not wait with it."""
    leader, follower = _in_sync_pair(monkeypatch)
    plan, generation = follower.fetch_plan(1)
    thread, answers = _parked_fetch(leader, plan, generation)
    thread.join(0.3)
    assert thread.is_alive(), "an idle, in-sync follower's fetch parks at the leader"
    moved = TopicPartition("t", 1)
    new = ControllerBatch(1, 5, [LeaderAndIsrEntry(moved, 1, 0, (1,), (1, 2), 0, True)])
    for rm in (leader, follower):
        rm.handle_controller_batch(new)
    gained = follower.take_gained()
    assert gained == {1: generation + 1} and follower.take_gained() == {}
    leader.wake_fetch({"replica_id": 2, "generation": gained[1]})
    thread.join(30)
    assert not thread.is_alive() and answers[0]["waited"]
    plan, _ = follower.fetch_plan(1)
    assert [entry[:2] for entry in plan] == [["t", 0], ["t", 1]]


def test_a_wake_that_arrives_before_the_fetch_it_wakes_is_not_lost(monkeypatch) -> None:
    """The follower's fetcher built its plan before it gained the partition and sends it after the wake."""
    leader, follower = _in_sync_pair(monkeypatch)
    stale_plan, stale_generation = follower.fetch_plan(1)
    leader.wake_fetch({"replica_id": 2, "generation": stale_generation + 1})
    thread, answers = _parked_fetch(leader, stale_plan, stale_generation)
    thread.join(30)
    assert not thread.is_alive() and answers[0]["waited"] is False
    thread, answers = _parked_fetch(leader, stale_plan, stale_generation + 1)  # as new as the wake: parks
    thread.join(0.3)
    assert thread.is_alive()
    leader.append(TP, 10)  # the log grows: the parked fetch answers with it
    thread.join(30)
    assert not thread.is_alive() and answers[0]["partitions"][0][4] == 110


def test_a_parked_fetch_wakes_only_for_partitions_its_follower_replicates(monkeypatch) -> None:
    """Every wake makes a parked fetch answer again: a leader's append wakes only that partition's followers."""
    leader, follower = _in_sync_pair(monkeypatch)
    other = TopicPartition("u", 0)  # led here, replicated by broker 3, not by the parked follower
    leader.handle_controller_batch(ControllerBatch(1, 5, [LeaderAndIsrEntry(other, 1, 0, (1, 3), (1, 3), 0, True)]))
    answered: list[int] = []
    answer = leader._answer_fetch
    monkeypatch.setattr(leader, "_answer_fetch", lambda rid, parts: (answered.append(rid), answer(rid, parts))[1])
    plan, generation = follower.fetch_plan(1)
    thread, answers = _parked_fetch(leader, plan, generation)
    thread.join(0.3)
    for _ in range(20):
        leader.append(other, 10)
    thread.join(0.3)
    assert thread.is_alive() and answered == [2], "the other partition's appends did not wake it"
    leader.append(TP, 10)
    thread.join(30)
    assert not thread.is_alive() and answers[0]["partitions"][0][4] == 110


def test_requests_from_an_older_controller_epoch_are_refused() -> None:
    _clock, leader, _follower = pair()
    with pytest.raises(RpcError, match="stale controller epoch 4"):
        leader.handle_controller_batch(ControllerBatch(9, 4, stop_replica=[(TP, True)]))
    assert TP in leader.replicas
    leader.handle_controller_batch(ControllerBatch(2, 6, stop_replica=[(TP, True)]))
    assert TP not in leader.replicas


def test_stale_leader_epoch_in_a_request_is_ignored() -> None:
    _clock, leader, _follower = pair()
    leader.handle_controller_batch(ControllerBatch(1, 5, [LeaderAndIsrEntry(TP, 1, 3, (1, 2), (1, 2), 3)]))
    reply = leader.handle_controller_batch(ControllerBatch(1, 5, [LeaderAndIsrEntry(TP, 2, 2, (2,), (1, 2), 2)]))
    assert reply["stale_partitions"] == ["t-0"] and leader.replicas[TP].state.leader == 1


def test_controller_batch_round_trips_through_the_wire_format() -> None:
    requests = BrokerRequests([LeaderAndIsrEntry(TP, 1, 2, (1, 2), (1, 2, 3), 4, True)], [(TP, False)], True)
    body = encode_batch(3, 9, requests, {1: BrokerAddress(1, "127.0.0.1", 9092, "r1")})
    batch = decode_batch(body)
    assert batch.leader_and_isr == requests.leader_and_isr and batch.stop_replica == [(TP, False)]
    assert batch.brokers == {1: BrokerAddress(1, "127.0.0.1", 9092, "r1")} and batch.controller_epoch == 9


@pytest.mark.parametrize("state", [
    PartitionState(1, 0, (1, 2, 3), 1),
    PartitionState(-1, 12, (), 4, version=1),
    PartitionState(1001, 2**31 - 1, (5,), 2**31 - 1),
])
def test_fast_state_encoding_is_byte_identical(state: PartitionState) -> None:
    doc = {"controller_epoch": state.controller_epoch, "leader": state.leader, "version": state.version,
           "leader_epoch": state.leader_epoch, "isr": list(state.isr)}
    assert encode_partition_state(state) == dumps_compact(doc)
