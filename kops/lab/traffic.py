"""Data for the lab: one-off appends at partition leaders and steady ingest rates.

The lab's traffic is keyed: a topic's bytes are spread over a uniform key space by KIP-253 linear hashing
(`kops.model.partitioner`), so partitions marked for deletion receive nothing and a partition split by an
expansion gives half of its keys to the new one. `produce` finds each partition's leader in ZooKeeper and
appends there over the broker RPC (followers then replicate it). `set_ingest` records a steady rate for the
whole topic in `/kops/lab/ingest`, which every broker watches; leaders grow their partitions by their share.
"""

from __future__ import annotations

import json

from kops.errors import KopsError, UsageError
from kops.model.partitioner import key_shares
from kops.model.snapshot import Snapshot
from kops.rpc import RpcClient, RpcError, RpcUnavailable
from kops.zk_layout import paths
from kops.zk_layout.client import NodeExists, VersionConflict, ZkClient
from kops.zk_layout.codecs.topics import decode_topic
from kops.zk_layout.reader import read_snapshot


def produce(client: ZkClient, topic: str, count: int, partition: int | None = None) -> dict[int, int]:
    """Append `count` bytes (spread evenly when no partition is named); the new log end per partition."""
    if count <= 0:
        raise UsageError("--bytes must be positive")
    snapshot = read_snapshot(client)
    found = snapshot.topics.get(topic)
    if found is None:
        raise UsageError(f"no topic {topic!r} in the lab", hint="create it first (kops apply, or Kafka's tools)")
    numbers = sorted(found.partitions)
    initial = found.initial_partition_count or len(numbers)
    undeleted = found.undeleted_partition_count or len(numbers)
    if partition is not None:
        if partition not in found.partitions:
            raise UsageError(f"topic {topic!r} has no partition "
                             f"{partition}", hint=f"partitions are 0..{len(numbers) - 1}")
        if partition >= undeleted:
            raise UsageError(f"{topic}-{partition} is marked for deletion (undeleted_partition_count {undeleted})",
                             hint=f"produce to partitions 0..{undeleted - 1}; it is removed once it has drained")
        shares = {partition: count}
    else:
        shares = _keyed_split(count, key_shares(initial, undeleted))
    return append_at_leaders(snapshot, topic, shares)


def fill(client: ZkClient, sizes: dict[str, dict[int, int]]) -> int:
    """Append each partition's bytes (topic -> partition -> bytes) at its leader, then bring its followers to the
    same log end at once, reading the layout once: a rehearsal's clone gets its replica sizes this way and starts
    in sync, as production does, instead of copying the bytes over the lab's links first (on a 50-broker clone
    that copy took twenty minutes). Bytes appended in all."""
    snapshot = read_snapshot(client)
    total = 0
    seeds: dict[int, list[list[object]]] = {}
    for topic, shares in sorted(sizes.items()):
        if topic not in snapshot.topics:
            raise UsageError(f"no topic {topic!r} in the lab", hint="create it first")
        partitions = snapshot.topics[topic].partitions
        for p, end in sorted(append_at_leaders(snapshot, topic, shares).items()):
            for broker in partitions[p].replicas:
                if broker != partitions[p].leader:
                    seeds.setdefault(broker, []).append([topic, p, end])
        total += sum(b for b in shares.values() if b > 0)
    _seed_followers(snapshot, seeds)
    return total


def _seed_followers(snapshot: Snapshot, seeds: dict[int, list[list[object]]]) -> None:
    """One `seed_followers` call per broker: its follower replicas' logs extended to their leaders' ends."""
    brokers = {b.id: b for b in snapshot.brokers}
    for broker_id, entries in sorted(seeds.items()):
        broker = brokers.get(broker_id)
        if broker is None or broker.host is None:
            raise KopsError(f"broker {broker_id} follows partitions being filled but is not running",
                            hint="start its brokers first")
        rpc = RpcClient(broker.host, broker.port, timeout=60.0)
        try:
            missing = rpc.call("seed_followers", {"partitions": entries}).get("missing", [])
        except (RpcError, RpcUnavailable) as exc:
            raise KopsError(f"broker {broker_id}: {exc.what}", hint="retry once the lab has settled") from None
        finally:
            rpc.close()
        if missing:
            raise KopsError(f"broker {broker_id} does not follow {len(missing)} partition(s) it should, e.g. "
                            f"{missing[0][0]}-{missing[0][1]}", hint="wait for the controller to settle, then retry")


def append_at_leaders(snapshot: Snapshot, topic: str, shares: dict[int, int]) -> dict[int, int]:
    """Append `shares` (partition -> bytes) at each partition's leader over the broker RPC; new log ends."""
    found = snapshot.topics[topic]
    brokers = {b.id: b for b in snapshot.brokers}
    ends: dict[int, int] = {}
    clients: dict[int, RpcClient] = {}
    try:
        for p, share in sorted(shares.items()):
            if share <= 0:
                continue
            leader = found.partitions[p].leader
            broker = brokers.get(leader)
            if broker is None or broker.host is None:
                raise KopsError(f"{topic}-{p} has no live leader (leader {leader})", hint="start its brokers first")
            rpc = clients.setdefault(leader, RpcClient(broker.host, broker.port))
            try:
                ends[p] = int(rpc.call("produce", {"topic": topic, "partition": p, "bytes": share})["end"])
            except (RpcError, RpcUnavailable) as exc:
                raise KopsError(f"{topic}-{p}: {exc.what}", hint="the leader may have just changed; retry") from None
    finally:
        for rpc in clients.values():
            rpc.close()
    return ends


def _keyed_split(count: int, weights: tuple[float, ...]) -> dict[int, int]:
    """`count` bytes split by the key shares, whole bytes, largest remainders first, summing to `count`."""
    exact = [count * w for w in weights]
    out = {p: int(x) for p, x in enumerate(exact)}
    for p in sorted(range(len(exact)), key=lambda p: (out[p] - exact[p], p))[: count - sum(out.values())]:
        out[p] += 1
    return out


def set_ingest(client: ZkClient, topic: str, rate: float) -> float:
    """Give `topic` a steady keyed ingest of `rate` bytes per simulated second in total (0 stops it).

    Stored for the whole topic; each leader takes its partition's key share. Returns the mean per-partition
    rate over the partitions producers write to now.
    """
    if rate < 0:
        raise UsageError("--rate must not be negative")
    numbers = client.children(paths.partitions(topic))
    if rate and not numbers:
        raise UsageError(f"no topic {topic!r} in the lab")
    while True:
        node = client.get(paths.LAB_INGEST)
        rates = {} if node is None or not node.data else json.loads(node.data).get("rates", {})
        if rate:
            rates[topic] = rate
        else:
            rates.pop(topic, None)
        data = json.dumps({"version": 2, "rates": dict(sorted(rates.items()))}, separators=(",", ":")).encode()
        try:
            if node is None:
                client.create(paths.LAB_INGEST, data, makepath=True)
            else:
                client.set(paths.LAB_INGEST, data, node.stat.version)
            return rate / _undeleted(client, topic, len(numbers or [])) if rate else 0.0
        except (NodeExists, VersionConflict):
            continue


def _undeleted(client: ZkClient, topic: str, partitions: int) -> int:
    node = client.get(paths.topic(topic))
    counted = None if node is None else decode_topic(node.data, paths.topic(topic)).undeleted_partition_count
    return counted or partitions or 1
