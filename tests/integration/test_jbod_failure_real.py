"""A log dir that fails in the middle of a disk move, on real Kafka 4 (issue 37, docs/design/jbod.md §6, §9).

How the dir is made to fail: it fills. Broker 2 of a two-broker lab (two log dirs each) has its second dir on a
tmpfs of TMPFS_MIB MiB, mounted before the lab formats it (root may mount one, as bench/jbod.py does). A chmod
would do nothing: the lab runs as root, and root writes through any mode bits. A full filesystem is a real fault
Kafka has to handle the same way as a dying disk: the write fails with an IOException (ENOSPC), its
LogDirFailureChannel takes the dir offline, the broker stops serving every replica in it and reports it to the
controller (KIP-858), and DescribeLogDirs answers KAFKA_STORAGE_ERROR for it.

The move: a partition on brokers (2, 1) whose replica on broker 2 sits in the big dir holds BEFORE_MIB MiB, so
`kops apply` of a disk move into the small dir passes its room check (the dir keeps its margin after the copy);
once the future replica is copying under a slow alter-log-dirs throttle, MORE_MIB MiB more are produced to the
partition, so the replica it copies grows larger than the tmpfs and Kafka gets ENOSPC writing the future replica.
`kops apply` must then stop (exit 3, a health stop) with a line naming broker 2 and the dir, and `--resume` stops
again on the same line before it writes anything. Broker 2 stays up, its replica in the big dir intact.

The small dir holds nothing but the move's future replica: kops's `__kops` topic is made first and every replica
of broker 2 moved out of the small dir. On two brokers `__kops` has two replicas and min.insync.replicas 2, so a
replica of it in the failed dir would stop kops's own record writes, which is a different failure from the one
tested here.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kops.cli.main import main
from kops.model import plan_format
from tests.engines import EngineLab, require_real
from tests.labtools import wait_until

pytestmark = pytest.mark.lab
TOPIC = "grows"
TMPFS_MIB = 6
BEFORE_MIB, MORE_MIB = 4, 4  # the replica at planning time, then what is produced while it copies
MIB = 2**20


def require_root() -> None:
    if os.geteuid() != 0:
        message = "mounting a tmpfs for a log dir needs root"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture
def small_dir_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EngineLab, Path]]:
    """Two brokers of two log dirs each, broker 2's second dir a TMPFS_MIB MiB tmpfs; the lab and that dir. One per
    test, so a rerun (tests/conftest.py) starts from a new lab."""
    require_real("kafka-4")
    require_root()
    from kops.lab.kafka_lab import KafkaLab

    lab = KafkaLab(tmp_path_factory.mktemp("jbod-failure"), detached=False)
    small = lab.directory.resolve() / "nodes" / "2" / "data-2"
    small.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_MIB}m", "tmpfs", str(small)], check=True)
    try:
        state = lab.up("kafka-4", brokers=2, racks=2, log_dirs_per_broker=2)
        assert lab.log_dirs(2)[1] == small
        yield EngineLab("kafka-4", lab, "", state.bootstrap), small
    finally:
        lab.down()
        assert not lab.pids_alive(), "a Kafka process survived lab.down()"
        subprocess.run(["umount", str(small)], check=True)


def empty_small_dir(bootstrap: str, big: str, small: str) -> None:
    """`__kops` made, then every replica of broker 2 out of the small dir, so its failure takes nothing else."""
    from kafka.admin import NewTopic

    from kops.cluster.admin.adapter import AdminCluster
    from kops.cluster.admin.connection import AdminSettings
    from kops.cluster.admin.kops_log import TOPIC as KOPS_TOPIC
    from kops.cluster.admin.kops_log import topic_settings
    from kops.lab.kafka_client import create_topics
    from kops.model.partitions import TopicPartition

    replicas, configs = topic_settings(2)
    create_topics(bootstrap, [NewTopic(KOPS_TOPIC, 1, replicas, topic_configs=configs),
                              NewTopic(TOPIC, replica_assignments={0: [2, 1]})])
    port = AdminCluster(AdminSettings(bootstrap))
    try:
        def emptied() -> bool:
            """Both topics' replicas listed on broker 2 (its log made), none in the small dir; each move asked again
            at each look: one asked of a partition just made may be dropped by its broker."""
            rows = [r for r in port.replica_dirs(port.log_dirs()) if r.broker == 2]
            left = {(TopicPartition(r.topic, r.partition), 2): big for r in rows if r.path == small}
            if left:
                assert set(port.alter_replica_dirs(left).values()) <= {None, "ReplicaNotAvailableError"}
            return {r.topic for r in rows} >= {KOPS_TOPIC, TOPIC} and not left

        wait_until(emptied, timeout=60, what=f"no replica of broker 2 left in {small}")
    finally:
        port.close()


def test_a_dir_that_fills_mid_move_is_a_health_stop_naming_broker_and_dir(small_dir_lab: tuple[EngineLab, Path],
                                                                          tmp_path: Path, capsys: Any) -> None:
    from kops.cluster.admin.adapter import AdminCluster
    from kops.cluster.admin.connection import AdminSettings
    from kops.lab.kafka_client import fill
    from kops.model.partitions import TopicPartition
    from tests.integration.test_executor import kops

    cluster, small_path = small_dir_lab
    bootstrap, lab = str(cluster.bootstrap), cluster.lab
    big, small = str(lab.log_dirs(2)[0]), str(small_path)
    empty_small_dir(bootstrap, big, small)
    fill(bootstrap, {TOPIC: {0: BEFORE_MIB * MIB}})
    given, plan_file = tmp_path / "given.json", tmp_path / "plan.json"
    given.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": TOPIC, "partition": 0, "replicas": [2, 1], "log_dirs": [small, "any"]}]}))
    # 256 KiB/s: 16 s to copy the first BEFORE_MIB, so the MORE_MIB produced next land before the copy catches up
    # (at 512 KiB/s a loaded CI machine once produced them after the move was done, and the apply ended with 0)
    assert main(["plan", "--import-kafka", str(given), "-b", bootstrap, "-o", str(plan_file), "--throttle",
                 "256KiB/s", "--format", "json"]) == 0
    plan = plan_format.loads(plan_file.read_bytes(), str(plan_file))
    assert [(m.partition, m.broker, m.from_dir, m.to_dir) for m in plan.disk_moves] == [(0, 2, big, small)]

    tp = TopicPartition(TOPIC, 0)
    port = AdminCluster(AdminSettings(bootstrap))
    try:
        applying = kops("apply", str(plan_file), "-b", bootstrap, "--yes", "--poll", "0.2")
        wait_until(lambda: port.dir_copies([(tp, 2)])[(tp, 2)].future_path == small, timeout=90,
                   what="the future replica copying into the small dir")
        fill(bootstrap, {TOPIC: {0: MORE_MIB * MIB}})  # the replica outgrows the dir while it copies
        out, err = applying.communicate(timeout=180)
        said = " ".join((out + err).split())
        offline = f"broker 2's log dir {small} is offline"
        assert applying.returncode == 3, said
        assert f"health stop in batch 1: {offline} (KafkaStorageError)" in said, said

        # what Kafka did: the dir offline, the broker up, the replica in its big dir whole, no future replica
        assert [d.error for d in port.log_dirs() if (d.broker, d.path) == (2, small)] == ["KafkaStorageError"]
        assert lab.running(2)
        copy = port.dir_copies([(tp, 2)])[(tp, 2)]
        assert (copy.path, copy.moving) == (big, False)
        assert copy.size >= (BEFORE_MIB + MORE_MIB) * MIB > TMPFS_MIB * MIB
        assert "No space left on device" in lab.server_log(2).read_text(errors="replace")

        capsys.readouterr()
        assert main(["apply", "--resume", str(plan_file), "-b", bootstrap, "--yes", "--poll", "0.2"]) == 3
        assert offline in " ".join(capsys.readouterr().out.split())
        # the replica never left its dir: the rollback has nothing to move and finishes, the dir still offline
        assert main(["rollback", str(plan_file), "-b", bootstrap, "--yes", "--poll", "0.2"]) == 0
        assert port.dir_copies([(tp, 2)])[(tp, 2)].path == big
    finally:
        port.close()
