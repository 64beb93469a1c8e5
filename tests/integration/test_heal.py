"""`kops rebalance --heal-after` on a broker killed for real (issue 38, docs/design/healing.md), on the kops engine
and real Kafka 3.9: a first run sees the broker absent but not long enough and moves nothing; a second run, in
another process with no local state in common, heals it once the duration has passed (the first sighting is kept
in ZooKeeper, `/kops/absent/<id>`); every partition is back at its replication factor and in sync, as Kafka itself
reports; a rollback while the broker is still gone is refused; the broker started again gets nothing back, and
the next run forgets it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kops.cli.main import main
from kops.zk_layout import paths
from kops.zk_layout.client import ZkClient, ZkSettings
from kops.zk_layout.reader import read_snapshot
from tests.integration.test_executor import judged, layout
from tests.labtools import wait_until
from tests.unit.test_run_metrics import only, parsed

pytestmark = pytest.mark.lab
HEAL_AFTER = 6.0  # seconds: the first run sees the broker gone a moment ago, the second waits past it
# Replication factor 2 over brokers 1-4; broker 4 holds a replica of half the partitions, leading two of them.
SPREAD = {"heal": {0: (4, 1), 1: (1, 4), 2: (2, 3), 3: (4, 2), 4: (3, 4), 5: (1, 2)}}


def summary(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def healing_metrics(prom: Path) -> tuple[float, float, float]:
    metrics = parsed(prom.read_text())
    return (only(metrics["kops_last_run_exit_code"]), only(metrics["kops_last_run_brokers_absent"]),
            only(metrics["kops_last_run_brokers_healed"]))


def test_a_killed_broker_is_healed_only_after_the_duration(engine_lab, tmp_path: Path, capsys) -> None:
    with engine_lab(time_scale=4.0) as cluster, ZkClient(ZkSettings(cluster.zk_connect)) as zk:
        zk_connect = cluster.zk_connect
        cluster.create_and_fill(zk, SPREAD, 1)
        wait_until(lambda: not read_snapshot(zk).under_replicated(), timeout=60, what="every partition in sync")
        cluster.lab.kill_broker(4)
        wait_until(lambda: 4 not in read_snapshot(zk).live_broker_ids, timeout=60, what="broker 4 unregistered")
        wait_until(lambda: not any(4 in p.isr for t in read_snapshot(zk).topics.values()
                                   for p in t.partitions.values()), timeout=60, what="broker 4 out of every ISR")
        before = layout(zk)
        prom = tmp_path / "kops-rebalance.prom"
        args = ["rebalance", "-z", zk_connect, "--heal-after", f"{HEAL_AFTER:g}s", "--apply", "--yes",
                "--format", "json", "--poll", "0.2", "--metrics-file", str(prom)]

        # First run: broker 4 absent a moment, not long enough: refused, nothing moved; its first sighting kept.
        assert main([*args, "-o", str(tmp_path / "first.json")]) == 3
        captured = capsys.readouterr()
        doc = summary(captured.out)
        assert doc["status"] == "refused" and doc["healed"] == [] and [a["broker"] for a in doc["absent"]] == [4]
        assert doc["absent"][0]["seconds"] < HEAL_AFTER
        assert f"(heals after {HEAL_AFTER:g} s)" in captured.err
        assert layout(zk) == before and zk.exists(f"{paths.KOPS_ABSENT}/4") is not None
        assert healing_metrics(prom) == (3, 1, 0)

        # Second run, after the duration, in another process with another state folder: heals.
        time.sleep(HEAL_AFTER)
        plan_file = tmp_path / "heal.json"
        env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "other-host")}
        done = subprocess.run([sys.executable, "-m", "kops.cli.main", *args, "-o", str(plan_file)], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        doc = summary(done.stdout)
        assert doc["status"] == "applied" and doc["healed"] == [4] and doc["absent"][0]["seconds"] >= HEAL_AFTER
        assert doc["moves"] == sum(4 in r for r in before["heal"].values())
        healed = layout(zk)
        for p, replicas in healed["heal"].items():
            assert 4 not in replicas and len(replicas) == 2, (p, replicas)
            if 4 not in before["heal"][p]:
                assert replicas == before["heal"][p]  # only broker 4's partitions moved
        assert judged(cluster, zk, healed)  # Kafka's own metadata agrees
        wait_until(lambda: not read_snapshot(zk).under_replicated(), timeout=120, what="every partition in sync")
        assert healing_metrics(prom) == (0, 1, 1)

        # Undoing the healing while broker 4 is still gone is refused, naming it: it could never finish.
        capsys.readouterr()
        assert main(["rollback", str(plan_file), "-z", zk_connect, "--yes", "--format", "json"]) == 1
        assert "back on broker(s) 4, which are not registered" in capsys.readouterr().err
        assert layout(zk) == healed

        # Broker 4 back: it gets nothing back, and the next run forgets it (nothing to heal, nothing to balance
        # above the threshold).
        cluster.lab.start_broker(4)
        wait_until(lambda: 4 in read_snapshot(zk).live_broker_ids, timeout=90, what="broker 4 registered again")
        capsys.readouterr()
        code = main([*args[:-2], "--metrics-file", str(prom), "--min-improvement", "0.9",
                     "-o", str(tmp_path / "third.json")])
        doc = summary(capsys.readouterr().out)
        assert code == 0 and doc["status"] == "noop" and doc["absent"] == [], doc
        assert layout(zk) == healed and zk.exists(f"{paths.KOPS_ABSENT}/4") is None
        assert healing_metrics(prom) == (0, 0, 0)
