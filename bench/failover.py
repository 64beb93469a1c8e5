"""Controller failover benchmark: 10,000 partitions led by one broker; kill it; time the re-election.

A lab of 3 broker processes on a real ZooKeeper. Every partition has replicas [L, x] with L a broker that is
not the controller. L is killed (SIGKILL); its registration vanishes when its session expires. Measured:
  failover_seconds      from the moment /brokers/ids/L vanishes (seen by a watch) to the last state znode
                        written with a new leader (max mtime of the 10,000 state znodes, ZooKeeper's clock)
  observed_seconds      the same end as seen by polling from outside (an upper bound)
  per_write_seconds     the baseline, in the same run: the same 10,000 leader changes written one znode at a
                        time (synchronous conditional setData, as a controller without batching would)
  speedup               per_write_seconds / failover_seconds
  queue_events_per_second  the controller's event queue alone (enqueue + dispatch of no-op events)
Targets (issue 3): failover_seconds <= 2, speedup >= 10. Seed 004 estimates 40 s at 4 ms per write.

Scenario paused_broker (`--scenario paused_broker`, issue 15): one broker paused with SIGSTOP (its session kept
alive) while the controller runs preferred elections in consecutive rounds of partitions it does not hold;
election_seconds is the slowest round, from the request to every new leader written and the request znode removed
by the controller (polled every 0.1–0.2 s); baseline_election_seconds, same run, a round with nobody paused. Target:
under a second.

Usage: python bench/failover.py [--partitions 10000] [--topics 10] [--scenario kill|paused_broker]
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kops.lab.controller.channel import call_registered_broker
from kops.lab.controller.eventloop import EventLoop
from kops.lab.kops_engine import Lab
from kops.lab.zookeeper import ZooKeeperServer
from kops.model.partitions import PartitionState, TopicPartition
from kops.zk_layout import paths, tool_writes
from kops.zk_layout.client import Node, ZkClient, ZkSettings
from kops.zk_layout.codecs.admin_requests import ReassignmentTarget
from kops.zk_layout.codecs.controller import decode_controller
from kops.zk_layout.codecs.partition_state import decode_partition_state, encode_partition_state


def _states(client: ZkClient, keys: list[tuple[str, int]]) -> list[tuple[PartitionState | None, Node | None]]:
    nodes = client.get_many([paths.partition_state(t, p) for t, p in keys])
    return [(None if n is None else decode_partition_state(n.data, "state"), n) for n in nodes]


def queue_throughput(events: int = 200_000) -> float:
    done = threading.Event()
    count = [0]

    def handle(_event: object) -> None:
        count[0] += 1
        if count[0] == events:
            done.set()

    loop: EventLoop[object] = EventLoop(handle, name="bench-loop").start()
    started = time.perf_counter()
    for i in range(events):
        loop.put(i)
    done.wait(120)
    elapsed = time.perf_counter() - started
    loop.stop()
    return events / elapsed


def per_write_baseline(server_connect: str, keys: list[tuple[str, int]], new_leader: int,
                       isr: tuple[int, ...]) -> float:
    """The same leader changes, one synchronous conditional write per partition, on a copy of the znodes."""
    chroot = "/bench-per-write"
    with ZkClient(ZkSettings(server_connect)) as root:
        root.ensure_path(chroot)
    with ZkClient(ZkSettings(server_connect + chroot)) as client:
        old = encode_partition_state(PartitionState(0, 0, (0,), 1))
        for topic in sorted({t for t, _ in keys}):
            client.ensure_path(paths.partitions(topic))
        for start in range(0, len(keys), 500):  # setup in multi-ops, not timed
            txn = client.transaction()
            for t, p in keys[start:start + 500]:
                txn.create(paths.partition(t, p))
                txn.create(paths.partition_state(t, p), old)
            txn.commit()
        new = encode_partition_state(PartitionState(new_leader, 1, isr, 2))
        started = time.perf_counter()
        for t, p in keys:
            client.set(paths.partition_state(t, p), new, 0)
        elapsed = time.perf_counter() - started
    with ZkClient(ZkSettings(server_connect)) as root:
        root.delete(chroot, recursive=True)
    return elapsed


def _wait_states(zk: ZkClient, keys: list[tuple[str, int]], done, timeout: float = 300) -> list:  # type: ignore[no-untyped-def]  # a helper over callables of any shape
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = _states(zk, keys)
        if all(s is not None and done(s) for s, _ in found):
            return found
        time.sleep(0.2)
    raise SystemExit("partitions did not reach the expected state in time")


def _election_seconds(zk: ZkClient, keys: list[tuple[str, int]], leader: int) -> float:
    """Request a preferred election of `keys`; seconds until every partition has its new leader and the
    controller is done with the request (it deletes the znode once its requests to the brokers are out)."""
    started = time.monotonic()
    tool_writes.request_preferred_election(zk, [TopicPartition(t, p) for t, p in keys])
    _wait_states(zk, keys, lambda s: s.leader == leader)
    _wait_absent(zk, paths.PREFERRED_REPLICA_ELECTION)
    return time.monotonic() - started


def _wait_absent(zk: ZkClient, path: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while zk.exists(path) is not None:
        if time.monotonic() > deadline:
            raise SystemExit(f"{path} stayed")
        time.sleep(0.05)


@contextmanager
def three_brokers(session_timeout: float) -> Iterator[tuple[Lab, ZkClient, int]]:
    """A lab of 3 brokers on its own ZooKeeper; (the lab, a client, the active controller's id)."""
    with tempfile.TemporaryDirectory() as tmp:
        server = ZooKeeperServer(Path(tmp) / "zk").start()
        lab = Lab(Path(tmp) / "lab", detached=False)
        try:
            lab.up(brokers=3, zookeeper=server.connect + "/bench", session_timeout=session_timeout)
            with ZkClient(ZkSettings(server.connect + "/bench")) as zk:
                yield lab, zk, decode_controller(zk.get(paths.CONTROLLER).data, "c").broker_id
        finally:
            lab.down()
            server.stop()


def paused_broker(partitions: int, rounds: int = 3) -> dict[str, object]:
    """Elections while one broker is paused (SIGSTOP, its session alive): it leads nothing of the elected
    partitions but every decision sends it UpdateMetadata. Baseline, same run: one round with nobody paused."""
    per_round = partitions // (rounds + 1)
    with three_brokers(session_timeout=120.0) as (lab, zk, active):
        quiet = max({1, 2, 3} - {active})
        a, b = sorted({1, 2, 3} - {quiet})
        groups = []
        for r in range(rounds + 1):
            name = f"elect-{r}"
            tool_writes.create_topic(zk, name, {p: (b, a) for p in range(per_round)})
            groups.append([(name, p) for p in range(per_round)])
        keys = [k for g in groups for k in g]
        _wait_states(zk, keys, lambda s: s.leader == b and set(s.isr) == {a, b})
        tool_writes.start_reassignment(zk, [ReassignmentTarget(t, p, (a, b)) for t, p in keys])  # reorder only
        _wait_absent(zk, paths.REASSIGN_PARTITIONS)  # leader b stays; a is now preferred
        baseline = _election_seconds(zk, groups[0], a)
        lab.pause_broker(quiet)
        try:
            paused = [_election_seconds(zk, g, a) for g in groups[1:]]
        finally:
            lab.resume_broker(quiet)
    return {"benchmark": "failover", "scenario": "paused_broker", "partitions": per_round,
            "rounds": rounds, "election_seconds": round(max(paused), 3),
            "election_seconds_each": [round(x, 3) for x in paused], "baseline_election_seconds": round(baseline, 3),
            "targets": {"election_seconds": 1}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--scenario", choices=["kill", "paused_broker"], default="kill")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.scenario == "paused_broker":
        print(json.dumps(paused_broker(args.partitions), sort_keys=True))
        return
    per_topic = args.partitions // args.topics
    with three_brokers(session_timeout=3.0) as (lab, zk, active):
        leader = next(b for b in (1, 2, 3) if b != active)
        other = next(b for b in (1, 2, 3) if b not in (active, leader))
        keys = []
        for t in range(args.topics):
            name = f"bench-{t:03d}"
            tool_writes.create_topic(zk, name, {p: (leader, active if p % 2 else other) for p in range(per_topic)})
            keys += [(name, p) for p in range(per_topic)]
        _wait_states(zk, keys, lambda s: s.leader == leader)
        time.sleep(2.0)  # followers fetching, steady state

        vanished: list[float] = []
        gone = threading.Event()

        def on_registration(node: Node | None) -> bool | None:
            if node is None:
                vanished.append(time.time())
                gone.set()
                return False
            return None

        zk.watch_data(paths.broker(leader), on_registration)
        lab.kill_broker(leader)
        killed = time.monotonic()
        if not gone.wait(60):
            raise SystemExit("the killed broker's registration did not vanish")
        seen_gone = time.monotonic()
        pending = list(keys)
        while pending and time.monotonic() - seen_gone < 120:
            found = _states(zk, pending)
            pending = [k for k, (s, _) in zip(pending, found) if s is None or s.leader == leader]
            if pending:
                time.sleep(0.5)  # light polling: the measure is the znodes' mtime, not this loop
        observed = time.monotonic() - seen_gone
        if pending:
            raise SystemExit(f"{len(pending)} partitions still led by the dead broker")
        final = _states(zk, keys)
        last_write = max(n.stat.mtime for _, n in final if n is not None) / 1000.0
        failover = max(0.0, last_write - vanished[0])
        assert all(s is not None and s.leader != leader and s.leader != -1 for s, _ in final)
        new_isr = final[0][0].isr if final[0][0] else (active,)
        controller_figures = call_registered_broker(zk, active, "status")["controller"]
        lab.down()  # the baseline runs on a quiet ZooKeeper, as before
        per_write = per_write_baseline(zk.connect.hosts_text, keys, active, new_isr)
    print(json.dumps({
        "benchmark": "failover",
        "partitions": len(keys),
        "session_expiry_seconds": round(seen_gone - killed, 3),
        "failover_seconds": round(failover, 3),
        "observed_seconds": round(observed, 3),
        "per_write_seconds": round(per_write, 3),
        "per_write_ms": round(per_write / len(keys) * 1000, 3),
        "speedup": round(per_write / failover, 1) if failover else None,
        "queue_events_per_second": round(queue_throughput()),
        "controller": controller_figures,
        "targets": {"failover_seconds": 2, "speedup": 10},
    }, sort_keys=True))


if __name__ == "__main__":
    main()
