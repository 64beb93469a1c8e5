"""One executor poll of a batch beside a whole-snapshot read, on a cluster of 100,000 partitions (issue 15).

A real ZooKeeper holds a Kafka-format cluster of `--partitions` partitions (topics of 50 partitions, RF 3, 30
brokers), written with kops's own writers as the snapshot benchmark does. A batch of `--batch` partitions spread
over `--batch // 50` topics is "in flight". Measured, each the best of `--repeat` runs:
  poll_seconds      what the executor reads per poll: the brokers, the controller and reassignment znodes, and
                    the batch's topics (read_snapshot(only_topics=...))
  snapshot_seconds  the baseline, same run: the whole snapshot, what a poll used to read
Target: poll_seconds < snapshot_seconds / 10.

Usage: python bench/poll.py [--partitions 100000] [--batch 500] [--repeat 5]     Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.builders builds the cluster

from kops.lab.snapshot_writer import write_snapshot
from kops.lab.zookeeper import ZooKeeperServer
from kops.zk_layout.client import ZkClient, ZkSettings
from kops.zk_layout.reader import read_snapshot
from tests.builders import brokers, round_robin, snapshot


def best(repeat: int, read) -> float:  # type: ignore[no-untyped-def]  # a helper over callables of any shape
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        read()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    per_topic = 50
    broker_list = brokers(30)
    ids = [b.id for b in broker_list]
    topics = [round_robin(f"t{i:05d}", per_topic, 3, ids, start=i) for i in range(args.partitions // per_topic)]
    cluster = snapshot(broker_list, topics)
    batch_topics = {t.name for t in topics[: max(1, args.batch // per_topic)]}
    with tempfile.TemporaryDirectory() as tmp:
        server = ZooKeeperServer(Path(tmp) / "zk").start()
        try:
            with ZkClient(ZkSettings(server.connect)) as zk:
                write_snapshot(zk, cluster)
                full = best(args.repeat, lambda: read_snapshot(zk))
                poll = best(args.repeat, lambda: read_snapshot(zk, only_topics=batch_topics))
                polled = read_snapshot(zk, only_topics=batch_topics)
                assert sum(len(t.partitions) for t in polled.topics.values()) == args.batch
        finally:
            server.stop()
    print(json.dumps({"benchmark": "poll", "partitions": args.partitions, "batch_partitions": args.batch,
                      "poll_seconds": round(poll, 4), "snapshot_seconds": round(full, 3),
                      "ratio": round(poll / full, 4), "target_met": poll < full / 10}), flush=True)


if __name__ == "__main__":
    main()
