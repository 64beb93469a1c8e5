"""Every kind of replica move, applied and rolled back in seconds, on every lab engine.

Add only, remove only, reorder only (same replicas, new order: nothing to copy, so Kafka completes it at
once), mixed, and one plan holding all four. A batch that never completes would hit `--batch-timeout` and exit
3: the lab controller once left a reorder-only entry in /admin/reassign_partitions for ever.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kops.cli.main import main
from kops.zk_layout import paths
from kops.zk_layout.client import ZkClient, ZkSettings
from tests.integration.test_executor import judged, throttle_configs

pytestmark = pytest.mark.lab
ORIGINAL = {"a": {0: (1, 2), 1: (1, 2)}, "b": {0: (2, 3, 4), 1: (3, 4, 2)}}  # topics keep one RF at creation
KINDS = {
    "add-only": {("a", 0): (1, 2, 3)},
    "remove-only": {("b", 0): (2, 3)},
    "reorder-only": {("b", 1): (2, 3, 4)},
    "mixed": {("a", 1): (3, 4)},
    "all-four": {("a", 0): (1, 2, 3), ("b", 0): (2, 3), ("b", 1): (2, 3, 4), ("a", 1): (3, 4)},
}


@pytest.fixture
def cluster_with_t(engine_lab):
    with engine_lab(time_scale=10.0) as cluster, ZkClient(ZkSettings(cluster.zk_connect)) as zk:
        cluster.create_and_fill(zk, ORIGINAL, 0.5)
        yield cluster, zk


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_of_move_applies_and_rolls_back(cluster_with_t, kind: str, tmp_path: Path) -> None:
    cluster, zk = cluster_with_t
    moves = tmp_path / "moves.json"
    moves.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": list(r)} for (t, p), r in KINDS[kind].items()]}))
    plan_file = tmp_path / "plan.json"
    connect = cluster.zk_connect
    assert main(["plan", "--import-kafka", str(moves), "-z", connect, "--throttle", "8MiB/s",
                 "-o", str(plan_file), "--format", "json"]) == 0
    run = ["-z", connect, "--yes", "--format", "json", "--poll", "0.2", "--batch-timeout", "45"]
    assert main(["apply", str(plan_file), *run]) == 0
    expected = {t: dict(parts) for t, parts in ORIGINAL.items()}
    for (t, p), replicas in KINDS[kind].items():
        expected[t][p] = replicas
    assert judged(cluster, zk, expected) and zk.exists(paths.REASSIGN_PARTITIONS) is None
    assert main(["rollback", str(plan_file), *run]) == 0
    assert judged(cluster, zk, ORIGINAL) and zk.exists(paths.REASSIGN_PARTITIONS) is None
    assert throttle_configs(zk) == {}
