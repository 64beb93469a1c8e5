"""Snapshot reader benchmark: 2,000 topics x 50 partitions (100,000 partition states) on a real ZooKeeper.

Measures, in one run against the same znodes:
  seconds                  kops' snapshot reader (multiRead pipelining), in a fresh process so that
                           peak_rss_mb is the reader's own
  sequential_seconds       the baseline: the same znodes read one by one with synchronous gets
  pipelined_async_seconds  a second reference: kazoo's get_async, windowed (kops' fallback for ZooKeeper < 3.6)
Targets (issue 2): speedup >= 5, seconds <= 15, peak_rss_mb <= 1024.

Usage: python bench/snapshot.py [--topics 2000] [--partitions 50]   (KOPS_ZOOKEEPER=host:port to reuse a server)
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid

from kops.lab.snapshot_writer import write_snapshot
from kops.lab.zookeeper import ZooKeeperServer
from kops.model.brokers import Broker
from kops.model.partitions import Partition, PartitionState
from kops.model.snapshot import ControllerInfo, Snapshot
from kops.model.topics import Topic
from kops.zk_layout import paths
from kops.zk_layout.client import ZkClient, ZkSettings
from kops.zk_layout.reader import read_snapshot

BROKERS = 30


def build(topics: int, partitions: int) -> Snapshot:
    brokers = tuple(
        Broker(id=b, host="127.0.0.1", port=9000 + b, endpoints=(f"PLAINTEXT://127.0.0.1:{9000 + b}",),
               rack=f"r{b % 3}")
        for b in range(1, BROKERS + 1)
    )
    layout = {}
    for t in range(topics):
        parts = {}
        for p in range(partitions):
            replicas = tuple((t + p + k) % BROKERS + 1 for k in range(3))
            parts[p] = Partition(replicas, state=PartitionState(replicas[0], 4, replicas, 3))
        name = f"topic-{t:05d}"
        layout[name] = Topic(name, parts, config={"retention.ms": "604800000"} if t % 4 == 0 else {})
    return Snapshot("bench-cluster-id-00000A", ControllerInfo(1, 3), brokers, layout)


def read_in_child(connect: str) -> dict:
    """Run the reader in a fresh interpreter: its time and its own peak RSS."""
    out = subprocess.run(
        [sys.executable, __file__, "--read-only", connect], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def read_only(connect: str) -> None:
    with ZkClient(ZkSettings(connect, session_timeout=60)) as client:
        started = time.perf_counter()
        snap = read_snapshot(client)
        seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "partitions": snap.partition_count, "peak_rss_mb": round(peak, 1),
                      "complete": snap.complete}))


def same_paths(client: ZkClient) -> list[str]:
    """Every znode the reader reads, in its order."""
    topics = client.children(paths.BROKER_TOPICS) or []
    configured = set(client.children(paths.config_root("topics")) or [])
    result = [paths.CONTROLLER, paths.CONTROLLER_EPOCH, paths.CLUSTER_ID]
    result += [paths.broker(int(b)) for b in client.children(paths.BROKER_IDS) or []]
    result += [paths.topic(t) for t in topics] + [paths.config("topics", t) for t in topics if t in configured]
    return result


def sequential_read(client: ZkClient) -> tuple[float, int]:
    """The baseline: one synchronous get per znode, partition states found from each topic znode."""
    from kops.zk_layout.codecs.topics import decode_topic

    started = time.perf_counter()
    count = 0
    for path in same_paths(client):
        node = client.get(path)
        count += 1
        if node is not None and path.startswith(paths.BROKER_TOPICS + "/"):
            name = path.rsplit("/", 1)[1]
            for p in sorted(decode_topic(node.data, path).replicas):
                client.get(paths.partition_state(name, p))
                count += 1
    return time.perf_counter() - started, count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topics", type=int, default=2000)
    parser.add_argument("--partitions", type=int, default=50)
    parser.add_argument("--read-only")
    args = parser.parse_args()
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)
    if args.read_only:
        read_only(args.read_only)
        return

    server = None
    base = os.environ.get("KOPS_ZOOKEEPER")
    if not base:
        server = ZooKeeperServer(tempfile.mkdtemp(prefix="kops-bench-zk-"), heap_mb=2048).start()
        base = server.connect
    connect = f"{base}/bench-snapshot-{uuid.uuid4().hex[:8]}"
    try:
        with ZkClient(ZkSettings(base)) as root:
            root.ensure_path(connect[len(base):])
        snapshot = build(args.topics, args.partitions)
        with ZkClient(ZkSettings(connect, session_timeout=60)) as client:
            started = time.perf_counter()
            znodes = write_snapshot(client, snapshot)
            write_seconds = time.perf_counter() - started
            del snapshot

            fast = read_in_child(connect)
            sequential_seconds, sequential_reads = sequential_read(client)

            client._multiread_ok = False  # kops' portable path: windowed kazoo get_async
            started = time.perf_counter()
            portable = read_snapshot(client)
            pipelined_async_seconds = time.perf_counter() - started
            assert portable.partition_count == fast["partitions"]
        with ZkClient(ZkSettings(base)) as root:
            root.delete(connect[len(base):], recursive=True)
    finally:
        if server:
            server.stop()

    print(
        json.dumps(
            {
                "benchmark": "snapshot",
                "topics": args.topics,
                "partitions": fast["partitions"],
                "znodes_written": znodes,
                "write_seconds": round(write_seconds, 2),
                "seconds": round(fast["seconds"], 3),
                "sequential_seconds": round(sequential_seconds, 2),
                "sequential_reads": sequential_reads,
                "pipelined_async_seconds": round(pipelined_async_seconds, 2),
                "speedup": round(sequential_seconds / fast["seconds"], 1),
                "peak_rss_mb": fast["peak_rss_mb"],
                "complete": fast["complete"],
                "machine": {"cpus": os.cpu_count(),
                            "ram_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30)},
            }
        )
    )


if __name__ == "__main__":
    main()
