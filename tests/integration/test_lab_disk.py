"""Lab brokers with a disk capacity (kops engine, real processes): what they report, and a full disk (KIP-112)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from kops.errors import KopsError
from kops.kip179.client import Kip179Client
from kops.kip179.protocol import ErrorCode
from kops.lab import traffic
from kops.lab.kops_engine import disk_capacities
from kops.lab.processes import pid_alive
from kops.model.partitions import TopicPartition
from kops.zk_layout import tool_writes
from kops.zk_layout.client import ZkClient, ZkSettings
from kops.zk_layout.codecs.log_dirs import parse_log_dirs
from tests.labtools import broker_status, running_lab, state, wait_until

pytestmark = pytest.mark.lab
MiB = 1024 * 1024


def produced(zk: ZkClient, topic: str, count: int, partition: int) -> bool:
    """Append at the leader; False while the partition has no leader yet or it just moved (poll again)."""
    try:
        return bool(traffic.produce(zk, topic, count, partition))
    except KopsError:
        return False


def leader_isr(zk: ZkClient, topic: str, partition: int) -> tuple[int, tuple[int, ...]] | None:
    found = state(zk, topic, partition)
    return None if found is None else (found.leader, tuple(sorted(found.isr)))


def sizes_on(zk: ZkClient, broker: int) -> dict[tuple[str, int], int]:
    """Each replica's size on `broker`, from its own view (log end − log start)."""
    return {(r[0], r[1]): r[5] - r[4] for r in broker_status(zk, broker)["replicas"]}


def test_brokers_report_their_capacity_minus_the_bytes_they_hold(tmp_path: Path, zk_connect: str) -> None:
    capacity = disk_capacities(["64MiB", "3=32MiB", "2=48MiB"], [1, 2, 3])
    with running_lab(tmp_path / "lab", zk_connect, brokers=3, disk_capacity=capacity, logdirs_every=1.0) as lab, \
            ZkClient(ZkSettings(zk_connect)) as zk, Kip179Client(zk) as api:
        tool_writes.create_topic(zk, "t", {0: (1, 3), 1: (2, 3), 2: (3, 1)})
        wait_until(lambda: all(state(zk, "t", p) for p in range(3)), what="topic created")
        for p, count in ((0, 5 * MiB), (1, 3 * MiB), (2, 2 * MiB + 123)):
            wait_until(functools.partial(produced, zk, "t", count, p), what=f"produce to t-{p}")
        held = {1: 5 * MiB + 2 * MiB + 123, 2: 3 * MiB, 3: 10 * MiB + 123}
        wait_until(lambda: all(sum(sizes_on(zk, b).values()) == held[b] for b in held), what="followers caught up")

        described = api.describe_log_dirs()
        assert sorted(described) == [1, 2, 3]
        for broker, dirs in described.items():
            (d,) = dirs
            assert (d.error, d.log_dir) == (ErrorCode.NONE, f"/kops-lab/broker-{broker}/data")
            assert sum(r.size for r in d.replicas) == held[broker]
            assert (d.total_bytes, d.usable_bytes) == (capacity[broker], capacity[broker] - held[broker])
        assert {r.tp: r.size for r in described[3][0].replicas} == {
            TopicPartition("t", 0): 5 * MiB, TopicPartition("t", 1): 3 * MiB, TopicPartition("t", 2): 2 * MiB + 123}

        # the snapshots: kafka-log-dirs' format unchanged, the capacity beside it under the same name
        capacity_doc, snapshot_text = wait_until(lambda: _newest_pair(lab.directory, 3, held[3]),
                                                 what="capacity file and its snapshot")
        assert capacity_doc["results"] == [{
            "logDir": "/kops-lab/broker-3/data", "errorCode": 0, "totalBytes": 32 * MiB,
            "usableBytes": 32 * MiB - held[3]}]
        report = parse_log_dirs(snapshot_text, "logdirs")
        assert sum(r.size for r in report.brokers[0].log_dirs[0].replicas) == held[3]
        assert set(json.loads(snapshot_text)["brokers"][0]["logDirs"][0]) == {"logDir", "error", "partitions"}


def _newest_pair(lab_dir: Path, broker: int, held: int) -> tuple[dict, str] | None:
    """The newest capacity file of `broker` written once it held `held` bytes, with the log-dirs snapshot of the
    same name; None (poll again) while none is written yet or the broker prunes the pair as it is read."""
    folder = lab_dir / "logdir-capacity"
    files = sorted(folder.glob(f"broker-{broker}-*.json"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    if not files:
        return None
    try:
        doc = json.loads(files[-1].read_text())
        snapshot = (lab_dir / "logdirs" / files[-1].name).read_text()
    except FileNotFoundError:
        return None
    return (doc, snapshot) if doc["results"][0]["usableBytes"] == doc["results"][0]["totalBytes"] - held else None


@pytest.mark.parametrize("path", ["follower", "leader"])
def test_a_full_disk_takes_the_dir_offline_stops_the_broker_and_leadership_moves(
        tmp_path: Path, zk_connect: str, path: str) -> None:
    """Broker 3 holds 8 MiB. `follower`: it fills copying t-1 from broker 1; `leader`: a produce to t-0, which it
    leads, does not fit. Either way it halts; the controller elects broker 1 where 3 led and shrinks the ISRs."""
    with running_lab(tmp_path / "lab", zk_connect, brokers=3, disk_capacity={3: 8 * MiB}) as lab, \
            ZkClient(ZkSettings(zk_connect)) as zk, Kip179Client(zk) as api:
        tool_writes.create_topic(zk, "t", {0: (3, 1, 2), 1: (1, 3, 2)})
        wait_until(lambda: all(state(zk, "t", p) for p in range(2)), what="topic created")
        pid = lab.state().pids[3]
        wait_until(lambda: produced(zk, "t", 3 * MiB, 0), what="produce to t-0")
        wait_until(lambda: sum(sizes_on(zk, 3).values()) == 3 * MiB, what="broker 3 holds t-0")
        assert api.describe_log_dirs([3])[3][0].usable_bytes == 5 * MiB

        if path == "leader":
            # the broker answers the failed write, or halts before its answer is sent (CI saw both)
            with pytest.raises(KopsError, match="KafkaStorageException|no answer from"):
                traffic.produce(zk, "t", 6 * MiB, 0)
        else:
            traffic.produce(zk, "t", 6 * MiB, 1)  # broker 1 takes it; broker 3's copy does not fit

        wait_until(lambda: not pid_alive(pid), what="broker 3 halting")
        assert lab._processes[3].wait(5) == 1  # Exit.halt(1)
        log = (lab.directory / "logs" / "broker-3.log").read_text()
        assert "No space left on device" in log and "Stopping serving replicas in dir /kops-lab/broker-3/data" in log
        assert "Shutdown broker because all log dirs in /kops-lab/broker-3/data have failed" in log

        # the controller, once the session expired: broker 1 leads t-0, broker 3 left every ISR
        wait_until(lambda: leader_isr(zk, "t", 0) == (1, (1, 2)), what="leadership of t-0 moving to broker 1")
        wait_until(lambda: leader_isr(zk, "t", 1) == (1, (1, 2)), what="broker 3 leaving the ISR of t-1")
        assert 3 not in api.describe_log_dirs()  # no longer registered
        wait_until(lambda: produced(zk, "t", MiB, 0), what="produce to t-0 at its new leader")

