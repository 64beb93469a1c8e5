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
from kops.model.capacity import LogDirUsage
from kops.model.partitions import TopicPartition
from kops.model.placement import ReplicaDir
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
    "capacity-report": """- name: retire broker 3, seen against each broker's capacity
  hosts: golden
  topics:
    - {name: clicks, fanout: 3}
  brokers: {decommission: [3]}
  execution:
    throttle: 20MiB/s
    batch: {max_partitions: 5, max_moves_per_broker: 3}
""",
    "capacity-decommission": """- name: retire broker 3 onto brokers of unequal disks, and keep payments on three
  hosts: golden
  topics:
    - {name: payments, replication_factor: 3}
  brokers: {decommission: [3]}
  execution:
    batch: {max_partitions: 6}
""",
    "capacity-over": """- name: broker 1 over its disk limit, disks by share (it sheds; brokers below tolerance fill)
  hosts: golden
  rebalance: {goal: bytes, tolerance: 0.1}
  execution: {throttle: 20MiB/s}
""",
    "goals": """- name: welcome brokers 7 and 8, create events, and place every replica by one goal list
  hosts: golden
  topics:
    - {name: events, partitions: 6, replication_factor: 3}
  brokers: {add: [7, 8]}
  rebalance: {goals: [disk, network_in, replicas, leaders], tolerance: 0}
  execution: {throttle: 20MiB/s, batch: {max_partitions: 8}}
""",
    "remove-log-dirs": """- name: empty broker 3's log dir /data/d2 (JBOD) before its disk is replaced
  hosts: golden
  brokers: {remove_log_dirs: {3: [/data/d2]}}
  execution: {throttle: 20MiB/s}
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


def capacity_snapshot():
    """The base cluster with each broker's one log dir reported (DescribeLogDirs v4): 8 GiB, of which 100 MiB
    hold other files than the replicas."""
    base = base_snapshot()
    held: dict[int, int] = {}
    for name, t in base.topics.items():
        for p, part in t.partitions.items():
            for b in part.replicas:
                held[b] = held.get(b, 0) + partition_size(name, p)
    total = 8 * 2**30
    return replace(base, log_dirs=tuple(LogDirUsage(b.id, "/var/lib/kafka/data", total,
                                                    total - held.get(b.id, 0) - 100 * 2**20) for b in base.brokers))


def six_brokers_snapshot():
    """The base cluster without its two empty brokers: every broker holds data."""
    base = base_snapshot()
    return replace(base, brokers=tuple(b for b in base.brokers if b.id <= 6))


def jbod_snapshot():
    """The capacity cluster with broker 3 on two log dirs of 4 GiB each (JBOD), its replicas alternately in
    /data/d1 and /data/d2 (read through the Admin API): /data/d1 has room for some of /data/d2's replicas, not all."""
    base = capacity_snapshot()
    mine = sorted(TopicPartition(name, p) for name, t in base.topics.items() for p, part in t.partitions.items()
                  if 3 in part.replicas)
    rows = tuple(ReplicaDir(tp.topic, tp.partition, 3, "/data/d1" if i % 2 == 0 else "/data/d2")
                 for i, tp in enumerate(mine))
    total = 4 * 2**30
    used = {path: sum(partition_size(r.topic, r.partition) for r in rows if r.path == path)
            for path in ("/data/d1", "/data/d2")}
    dirs = tuple(d for d in base.log_dirs if d.broker != 3) + tuple(
        LogDirUsage(3, path, total, total - used[path] - 50 * 2**20) for path in sorted(used))
    return replace(base, log_dirs=tuple(sorted(dirs)), replica_dirs=tuple(sorted(rows)), replica_dirs_read=True)


SNAPSHOTS = {"decommission-tiered": tiered_snapshot, "capacity-report": capacity_snapshot,
             "capacity-over": six_brokers_snapshot, "goals": capacity_snapshot, "remove-log-dirs": jbod_snapshot}
INVENTORIES = {"capacity-report": INVENTORY + """\
      capacity:
        network_in: 8MiB/s
        network_out: 32MiB/s
        max_replicas: 40
        brokers:
          1: {disk: 6GiB}           # declared over the reported 8 GiB; already over 0.75 of it
        limits: {disk: 0.75}
"""}
INVENTORIES["capacity-decommission"] = INVENTORY + """\
      capacity:
        disk: 8GiB                  # brokers 1-6, each within 0.8 of it today
        brokers:
          6: {disk: 6GiB}           # broker 3's rack-mate: without limits it would take most of 3's bytes
          7: {disk: 2GiB}           # a small new broker: by count it would take as much as 8
          8: {disk: 16GiB}
"""
INVENTORIES["capacity-over"] = INVENTORY + """\
      capacity:
        disk: 9GiB
        brokers:
          1: {disk: 5GiB}           # over: it holds 4.8 GiB, and its limit is 0.8 of 5 GiB
          3: {disk: 11GiB}
          4: {disk: 10GiB}          # broker 1's rack-mate, with room: most of 1's partitions span every rack
          5: {disk: 7GiB}
          6: {disk: 4GiB}
"""
INVENTORIES["goals"] = INVENTORY + """\
      capacity:
        network_in: 16MiB/s         # every broker's disk is its reported log dir (8 GiB): both charts drawn
        network_out: 64MiB/s
"""
WRITES = {"capacity-report": {"clicks": 512 * 2**10, "orders": 256 * 2**10},
          "goals": {"clicks": 512 * 2**10, "orders": 256 * 2**10, "payments": 64 * 2**10, "logs": 32 * 2**10,
                    "legacy": 16 * 2**10}}  # bytes/s per partition of these topics


def partition_size(name: str, p: int) -> int:
    return (1 + zlib.crc32(f"{name}-{p}".encode()) % 50) * 10 * 2**20


def sizes_document(snap, writes: dict[str, int] | None = None) -> str:
    """Sizes of every partition: `bytes` the local log; tiered topics hold twenty times as much remotely;
    `writes` the write rates of some topics' partitions."""
    rows = []
    for name, t in sorted(snap.topics.items()):
        tiered = t.config.get("remote.storage.enable") == "true"
        for p in sorted(t.partitions):
            size = partition_size(name, p)
            row = {"topic": name, "partition": p, "bytes": size, "growth_bytes_per_s": 0.0}
            if tiered:
                row["remote_bytes"] = 20 * size
            if writes and name in writes:
                row["write_bytes_per_s"] = float(writes[name])
            rows.append(json.dumps(row))
    return "\n".join(rows) + "\n"


def write_all(only: str | None = None) -> None:
    """Every scenario's folder, or `only` that one's."""
    from kops.cli.main import main

    for name, playbook in SCENARIOS.items():
        if only is not None and name != only:
            continue
        snap = SNAPSHOTS.get(name, base_snapshot)()
        folder = HERE / name
        folder.mkdir(exist_ok=True)
        (folder / "inventory.yml").write_text(INVENTORIES.get(name, INVENTORY))
        (folder / "playbook.yml").write_text(playbook)
        (folder / "snapshot.json").write_bytes(snapshot_format.dumps(snap))
        (folder / "sizes.json").write_text(sizes_document(snap, WRITES.get(name)))
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
    import sys

    write_all(sys.argv[1] if len(sys.argv) > 1 else None)
