"""KIP-236 cancellation benchmark: roll back 500 in-flight reassignments through the lab controller.

A lab of 4 broker processes on a real ZooKeeper; 5 topics × 100 partitions of 1 MB each, replicas [a, b],
all reassigned to other brokers under a tight throttle so that every move is still copying. Then
`/admin/cancel_reassignment_in_progress` is created. Measured:
  cancel_seconds   from creating the cancel znode to the controller deleting it (seen by a watch), by which
                   time every partition is back on its original replicas (checked after)
  start_seconds    reference, same run: from creating the reassignment znode to every move being in flight
                   (the controller's work in the other direction)
Target (issue 4): cancel_seconds <= 2 for 500 partitions.

Usage: python bench/cancel.py [--partitions 500]     Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import threading
import time
from pathlib import Path

from kops.lab import traffic
from kops.lab.kops_engine import Lab
from kops.lab.zookeeper import ZooKeeperServer
from kops.zk_layout import paths, tool_writes
from kops.zk_layout.client import Node, ZkClient, ZkSettings
from kops.zk_layout.codecs.admin_requests import ReassignmentTarget
from kops.zk_layout.codecs.topics import decode_topic

MB = 1024 * 1024
BROKERS = 4


def topics_state(zk: ZkClient, names: list[str]) -> dict[str, object]:
    return {n: decode_topic(node.data, n) for n, node in zip(names, zk.get_many([paths.topic(n) for n in names]))}


def wait_for(check, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]  # a helper over callables of any shape
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=500)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    per_topic = 100
    names = [f"cancel-{t}" for t in range(max(1, args.partitions // per_topic))]
    with tempfile.TemporaryDirectory() as tmp:
        server = ZooKeeperServer(Path(tmp) / "zk").start()
        lab = Lab(Path(tmp) / "lab", detached=False)
        try:
            lab.up(brokers=BROKERS, zookeeper=server.connect + "/bench", session_timeout=6.0, time_scale=10.0)
            with ZkClient(ZkSettings(server.connect + "/bench")) as zk:
                originals: dict[tuple[str, int], tuple[int, ...]] = {}
                targets = []
                for t, name in enumerate(names):
                    assignment = {p: ((p + t) % BROKERS + 1, (p + t + 1) % BROKERS + 1) for p in range(per_topic)}
                    tool_writes.create_topic(zk, name, assignment)
                    for p, replicas in assignment.items():
                        originals[(name, p)] = replicas
                        replicas = ((p + t + 2) % BROKERS + 1, (p + t + 3) % BROKERS + 1)
                        targets.append(ReassignmentTarget(name, p, replicas))
                wait_for(lambda: all(zk.exists(paths.partition_state(n, per_topic - 1)) for n in names), 120, "create")
                for name in names:
                    wait_for(lambda name=name: _produce(zk, name, per_topic * MB), 30, "produce")
                for b in range(1, BROKERS + 1):
                    tool_writes.alter_config(zk, "brokers", str(b), {"follower.replication.throttled.rate": str(MB)})
                for name in names:
                    tool_writes.alter_config(zk, "topics", name, {"follower.replication.throttled.replicas": "*"})
                time.sleep(3.0)  # original followers replicate the data: 30 simulated seconds

                started = time.monotonic()
                tool_writes.start_reassignment(zk, targets)
                wait_for(lambda: all(len(a.adding) == per_topic for a in topics_state(zk, names).values()), 120,
                         "every move in flight")
                start_seconds = time.monotonic() - started

                done = threading.Event()
                created_seen = threading.Event()

                def on_cancel(node: Node | None) -> bool | None:
                    if node is not None:
                        created_seen.set()
                        return None
                    if created_seen.is_set():
                        done.set()
                        return False
                    return None

                zk.watch_data(paths.CANCEL_REASSIGNMENT, on_cancel)
                t0 = time.monotonic()
                zk.create(paths.CANCEL_REASSIGNMENT, b"")
                if not done.wait(120):
                    raise SystemExit("the cancel znode was not deleted")
                cancel_seconds = time.monotonic() - t0
                after = topics_state(zk, names)
                restored = sum(1 for n, a in after.items() for p, r in a.replicas.items()
                               if r == originals[(n, p)] and not a.adding.get(p))
                reassign_left = zk.exists(paths.REASSIGN_PARTITIONS) is not None
        finally:
            lab.down()
            server.stop()
    print(json.dumps({
        "benchmark": "cancel",
        "partitions": len(targets),
        "cancel_seconds": round(cancel_seconds, 3),
        "start_seconds": round(start_seconds, 3),
        "restored_in_original_order": restored,
        "reassignment_znode_left": reassign_left,
        "targets": {"cancel_seconds": 2},
    }, sort_keys=True))


def _produce(zk: ZkClient, name: str, count: int) -> bool:
    try:
        return bool(traffic.produce(zk, name, count))
    except Exception:  # noqa: BLE001 - a leader may still be starting; retried
        return False


if __name__ == "__main__":
    main()
