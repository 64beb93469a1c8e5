"""Declarations benchmark: validate a playbook of 10,000 templated topics across 3 environments.

Measures `load_declarations` (YAML with locations, Jinja2 per value per cluster, Kafka config checks) and, as
the same run's baseline, the floor of the work: PyYAML's C-less `safe_load` of the same file.
Target (issue 5): seconds <= 5.

Usage: python bench/declare.py [--topics 10000]     Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import yaml

from kops.declare.loader import load_declarations

INVENTORY = """
all:
  children:
    kafka:
      hosts:
        dev: {zookeeper: "zk-dev:2181/kafka", rf: 2, parts: 6, retention_days: 1}
        staging: {zookeeper: "zk-stg:2181/kafka", rf: 3, parts: 12, retention_days: 3}
        prod: {zookeeper: "zk-prod:2181/kafka", rf: 3, parts: 24, retention_days: 7}
"""


def playbook(topics: int) -> str:
    lines = [
        "- name: ten thousand topics",
        "  hosts: kafka",
        "  vars:",
        "    retention_ms: \"{{ retention_days * 86400000 }}\"",
        "  topic_defaults:",
        "    replication_factor: \"{{ rf }}\"",
        "    config:",
        "      retention.ms: \"{{ retention_ms }}\"",
        "      min.insync.replicas: \"{{ rf - 1 }}\"",
        "  topics:",
    ]
    for i in range(topics):
        lines.append(f"    - name: \"team{i % 50}.service{i}.{{{{ inventory_hostname }}}}\"")
        lines.append(f"      partitions: \"{{{{ parts * {1 + i % 3} }}}}\"")
        if i % 4 == 0:
            lines.append("      config: {cleanup.policy: compact, segment.bytes: \"{{ '512MiB' | size }}\"}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topics", type=int, default=10000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="kops-bench-declare-"))
    (folder / "inventory.yml").write_text(INVENTORY)
    pb = folder / "playbook.yml"
    pb.write_text(playbook(args.topics))

    started = time.perf_counter()
    yaml.safe_load(pb.read_text())
    baseline = time.perf_counter() - started

    started = time.perf_counter()
    declarations = load_declarations(pb, folder / "inventory.yml")
    seconds = time.perf_counter() - started
    assert declarations.ok, [str(p) for p in declarations.problems.errors[:3]]
    per_cluster = {name: len(d.topics) for name, d in declarations.desired.items()}
    assert all(count == args.topics for count in per_cluster.values()), per_cluster
    print(json.dumps({
        "benchmark": "declare",
        "topics": args.topics,
        "clusters": len(per_cluster),
        "topic_declarations": declarations.topic_count,
        "seconds": round(seconds, 3),
        "yaml_safe_load_seconds": round(baseline, 3),
        "playbook_bytes": pb.stat().st_size,
        "machine": {"cpus": os.cpu_count()},
    }))


if __name__ == "__main__":
    main()
