"""The golden planning scenarios: a base cluster and one playbook per scenario.

`python -m tests.golden.scenarios` (or KOPS_UPDATE_GOLDEN=1 pytest tests/unit/test_golden.py) rewrites every
folder: inventory.yml, playbook.yml, snapshot.json, sizes.json, and the expected plan (JSON and Markdown)
computed by `kops plan`. Review the diff before committing it: it is the planner's behaviour.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import replace
from pathlib import Path

from kops.model import snapshot_format
from tests.builders import brokers, round_robin, snapshot, topic

HERE = Path(__file__).parent

INVENTORY = """all:
  hosts:
    golden:
      zookeeper: 127.0.0.1:2181/golden
"""

SCENARIOS = {
    "create": """- name: create a topic
  hosts: golden
  topics:
    - name: events
      partitions: 6
      replication_factor: 3
      config: {retention.ms: 86400000}
""",
    "add-partitions": """- name: more partitions
  hosts: golden
  topics:
    - name: orders
      partitions: 16
""",
    "rf-up": """- name: raise the replication factor
  hosts: golden
  topics:
    - name: payments
      replication_factor: 3
  execution: {throttle: 10MiB/s}
""",
    "rf-down": """- name: lower the replication factor
  hosts: golden
  topics:
    - name: orders
      replication_factor: 2
""",
    "decommission": """- name: retire broker 3
  hosts: golden
  brokers: {decommission: [3]}
  execution:
    throttle: 20MiB/s
    batch: {max_partitions: 5, max_moves_per_broker: 3}
""",
    "decommission-tiered": """- name: retire broker 3, tiered and untiered topics alike
  hosts: golden
  brokers: {decommission: [3]}
  execution:
    throttle: 20MiB/s
    batch: {max_partitions: 5, max_moves_per_broker: 3}
""",
    "add-brokers": """- name: welcome brokers 7 and 8
  hosts: golden
  brokers: {add: [7, 8]}
  execution: {throttle: 20MiB/s, batch: {max_partitions: 8}}
""",
    "rebalance": """- name: even out replicas
  hosts: golden
  rebalance: {goal: replicas, tolerance: 0}
  execution: {throttle: 20MiB/s}
""",
    "leader-balance": """- name: even out leaders
  hosts: golden
  rebalance: {goal: leaders}
""",
    "config-change": """- name: tune orders
  hosts: golden
  topics:
    - name: orders
      config:
        retention.ms: 86400000
        segment.ms: 604800000
        cleanup.policy: delete
        max.message.bytes: 2097152
""",
    "destructive-guard": """- name: retire the legacy topic
  hosts: golden
  allow_delete: true
  topics:
    - name: legacy
      state: absent
""",
}


def base_snapshot():
    broker_list = brokers(8)  # 1..6 hold data, 7 and 8 are registered and empty
    six = [1, 2, 3, 4, 5, 6]
    topics = [
        round_robin("orders", 12, 3, six),
        round_robin("payments", 6, 2, six, start=1),
        topic("clicks", [(1, 2, 3)] * 8),
        topic("logs", [(1, 2, 3), (1, 3, 5), (1, 5, 6), (1, 6, 2)]),
        round_robin("legacy", 2, 2, six, start=3),
    ]
    topics[0] = topics[0].__class__(topics[0].name, topics[0].partitions,
                                    config={"retention.ms": "604800000", "cleanup.policy": "delete"})
    return snapshot(broker_list, topics)


def tiered_snapshot():
    """The base cluster with `events` in tiered storage (KIP-405): most of its bytes are in remote storage."""
    base = base_snapshot()
    events = round_robin("events", 6, 3, [1, 2, 3, 4, 5, 6], start=2)
    events = events.__class__(events.name, events.partitions,
                              config={"remote.storage.enable": "true", "local.retention.ms": "3600000"})
    return replace(base, topics={**base.topics, "events": events})


SNAPSHOTS = {"decommission-tiered": tiered_snapshot}


def sizes_document(snap) -> str:
    """Sizes of every partition: `bytes` the local log; tiered topics hold twenty times as much remotely."""
    rows = []
    for name, t in sorted(snap.topics.items()):
        tiered = t.config.get("remote.storage.enable") == "true"
        for p in sorted(t.partitions):
            size = (1 + zlib.crc32(f"{name}-{p}".encode()) % 50) * 10 * 2**20
            row = {"topic": name, "partition": p, "bytes": size, "growth_bytes_per_s": 0.0}
            if tiered:
                row["remote_bytes"] = 20 * size
            rows.append(json.dumps(row))
    return "\n".join(rows) + "\n"


def write_all() -> None:
    from kops.cli.main import main

    for name, playbook in SCENARIOS.items():
        snap = SNAPSHOTS.get(name, base_snapshot)()
        folder = HERE / name
        folder.mkdir(exist_ok=True)
        (folder / "inventory.yml").write_text(INVENTORY)
        (folder / "playbook.yml").write_text(playbook)
        (folder / "snapshot.json").write_bytes(snapshot_format.dumps(snap))
        (folder / "sizes.json").write_text(sizes_document(snap))
        args = ["plan", str(folder / "playbook.yml"), "-i", str(folder / "inventory.yml"),
                "--snapshot", str(folder / "snapshot.json"), "--sizes", str(folder / "sizes.json")]
        assert main([*args, "-o", str(folder / "expected-plan.json")]) == 0, name
        import contextlib
        import io

        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            assert main([*args, "--format", "markdown"]) == 0
        (folder / "expected.md").write_text(buffer.getvalue())


if __name__ == "__main__":
    write_all()
