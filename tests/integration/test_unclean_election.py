"""No unclean leader election unless the operator allowed it, on every lab engine.

A partition on brokers 1 and 2 loses broker 2 (the ISR shrinks to [1]), then broker 1; broker 2 returns, out of
sync. Kafka (and so the lab) keeps the partition offline, leader -1 with its ISR kept, until broker 1 returns;
with unclean.leader.election.enable=true on the topic it elects broker 2 (data may be lost). `kops status`
names the offline partition and what it waits for.
"""

from __future__ import annotations

import json

import pytest

from kops.cli.main import main
from kops.zk_layout import tool_writes
from kops.zk_layout.client import ZkClient, ZkSettings
from kops.zk_layout.reader import read_snapshot
from tests.labtools import state, wait_until

pytestmark = pytest.mark.lab


@pytest.mark.parametrize("unclean", [False, True], ids=["default", "allowed"])
def test_an_offline_partition_waits_for_its_isr_unless_unclean_is_allowed(engine: str, engine_lab, unclean: bool,
                                                                           capsys) -> None:
    if engine != "kops" and not unclean:
        pytest.skip("waiting for the ISR is Kafka's default, checked on the kops engine; real Kafka runs the election")
    with engine_lab(time_scale=10.0) as cluster, ZkClient(ZkSettings(cluster.zk_connect)) as zk:
        cluster.create_and_fill(zk, {"fragile": {0: (1, 2)}}, 0.2)
        if unclean:
            tool_writes.alter_config(zk, "topics", "fragile", {"unclean.leader.election.enable": "true"})
        lab = cluster.lab
        lab.kill_broker(2)
        wait_until(lambda: state(zk, "fragile", 0).isr == (1,), timeout=60, what="ISR shrunk to broker 1")
        lab.kill_broker(1)
        wait_until(lambda: state(zk, "fragile", 0).leader == -1, timeout=60, what="no leader")
        assert state(zk, "fragile", 0).isr == (1,)  # kept: broker 1 is the one that can return cleanly
        lab.start_broker(2)
        wait_until(lambda: 2 in read_snapshot(zk).live_broker_ids, timeout=60, what="broker 2 back")
        if unclean:
            wait_until(lambda: state(zk, "fragile", 0).leader == 2, timeout=60, what="unclean election of broker 2")
            assert state(zk, "fragile", 0).isr == (2,)
        else:
            capsys.readouterr()
            assert main(["status", "-z", cluster.zk_connect, "--format", "json"]) == 0
            [offline] = json.loads(capsys.readouterr().out)["offline"]
            assert offline["topic"] == "fragile" and offline["isr"] == [1] and offline["live_replicas"] == [2]
            assert state(zk, "fragile", 0).leader == -1  # broker 2's return elected nothing
            assert main(["status", "-z", cluster.zk_connect]) == 0
            assert "fragile-0 has no live leader" in capsys.readouterr().out
        lab.start_broker(1)
        wait_until(lambda: state(zk, "fragile", 0).leader in (1, 2), timeout=60, what="online again")
        wait_until(lambda: set(state(zk, "fragile", 0).isr) == {1, 2}, timeout=90, what="both in sync")
