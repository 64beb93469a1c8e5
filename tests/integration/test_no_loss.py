"""No acknowledged record is lost while kops moves partitions, even when a leader is killed in the middle.

As Kafka's own reassignment system test: an acks=all, idempotent producer (librdkafka) writes records numbered
per partition while `kops apply` runs; a leader of the batch in flight is killed with SIGKILL; the apply
stops at a checkpoint (health stop), the broker comes back, the apply resumes and finishes; a consumer
(kafka-python) then reads every partition: nothing acknowledged is missing, order is kept per partition.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kops.cluster.zookeeper import ZkRecords
from kops.executor.journal import Journal
from kops.kafka import admin, paths
from kops.kafka.client import ZkClient, ZkSettings
from kops.kafka.reader import read_snapshot
from kops.lab.delivery import SequenceProducer, compare, read_back
from tests.engines import EngineLab, reset_real_cluster
from tests.integration.test_executor import apply_in_background, judged, make_plan, resume, throttle_configs
from tests.labtools import state, wait_until

pytestmark = pytest.mark.lab
LEDGER = {"ledger": {p: ((p % 3) + 1, ((p + 1) % 3) + 1, ((p + 2) % 3) + 1) for p in range(6)}}
PLAYBOOK = """- hosts: all
  topics:
    - {name: ledger, config: {min.insync.replicas: "2"}}
  brokers: {decommission: [3]}
  execution: {throttle: 1MiB/s, batch: {max_partitions: 2}}
"""


def test_no_acknowledged_record_is_lost_through_a_leader_kill_a_stop_and_a_resume(kafka39: EngineLab,
                                                                                   tmp_path: Path) -> None:
    cluster = kafka39
    reset_real_cluster(cluster.lab, cluster.zk_connect)
    assert cluster.bootstrap is not None
    with ZkClient(ZkSettings(cluster.zk_connect)) as zk:
        cluster.create_and_fill(zk, LEDGER, 3)
        admin.alter_config(zk, "topics", "ledger", {"min.insync.replicas": "2"})
        plan_file, plan = make_plan(tmp_path, cluster.zk_connect, playbook=PLAYBOOK)
        producer = SequenceProducer(cluster.bootstrap, "ledger", 6, rate=400).start()
        wait_until(lambda: producer.acks.count > 200, timeout=60, what="records acknowledged before the apply")

        proc = apply_in_background(plan_file, cluster.zk_connect)
        wait_until(lambda: zk.exists(paths.REASSIGN_PARTITIONS) is not None, what="first batch running")
        first = plan.batches[0].moves
        victim = state(zk, first[0].topic, first[0].partition).leader  # the leader serving the copy
        assert zk.exists(paths.REASSIGN_PARTITIONS) is not None, "the batch is still in flight when the leader dies"
        cluster.lab.kill_broker(victim)
        _out, err = proc.communicate(timeout=180)
        assert proc.returncode == 3, err  # a health stop, at a checkpoint
        assert "health stop" in Journal(ZkRecords(zk)).latest().stop_reason

        cluster.lab.start_broker(victim)
        wait_until(lambda: victim in read_snapshot(zk).live_broker_ids, timeout=60, what="the broker back")
        wait_until(lambda: not read_snapshot(zk).under_replicated(), timeout=120, what="in sync again")
        assert resume(plan_file, cluster.zk_connect) == 0
        acks = producer.stop()
        expected = {"ledger": dict(LEDGER["ledger"])}
        for m in plan.moves:
            expected["ledger"][m.partition] = m.to_replicas
        assert judged(cluster, zk, expected) and throttle_configs(zk) == {}

    verdict = compare(acks, read_back(cluster.bootstrap, "ledger", 6))
    assert verdict.acknowledged > 1000
    assert verdict.lost == 0 and verdict.out_of_order == 0 and verdict.duplicates == 0, verdict
