"""Data for the lab: one-off appends at partition leaders and steady ingest rates.

`produce` finds each partition's leader in ZooKeeper and appends there over the broker RPC (followers then
replicate it). `set_ingest` records a steady rate in `/kops/lab/ingest`, which every broker watches: leaders
grow their partitions by rate ÷ partitions per simulated second.
"""

from __future__ import annotations

import json

from kops.errors import KopsError, UsageError
from kops.kafka import paths
from kops.kafka.client import NodeExists, VersionConflict, ZkClient
from kops.kafka.reader import read_snapshot
from kops.rpc import RpcClient, RpcError, RpcUnavailable


def produce(client: ZkClient, topic: str, count: int, partition: int | None = None) -> dict[int, int]:
    """Append `count` bytes (spread evenly when no partition is named); the new log end per partition."""
    if count <= 0:
        raise UsageError("--bytes must be positive")
    snapshot = read_snapshot(client)
    found = snapshot.topics.get(topic)
    if found is None:
        raise UsageError(f"no topic {topic!r} in the lab", hint="create it first (kops apply, or Kafka's tools)")
    numbers = sorted(found.partitions)
    if partition is not None:
        if partition not in found.partitions:
            raise UsageError(f"topic {topic!r} has no partition {partition}", hint=f"partitions are 0..{len(numbers) - 1}")
        shares = {partition: count}
    else:
        base, extra = divmod(count, len(numbers))
        shares = {p: base + (1 if i < extra else 0) for i, p in enumerate(numbers)}
    brokers = {b.id: b for b in snapshot.brokers}
    ends: dict[int, int] = {}
    clients: dict[int, RpcClient] = {}
    try:
        for p, share in sorted(shares.items()):
            if share == 0:
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


def read_ingest(client: ZkClient) -> dict[str, float]:
    node = client.get(paths.LAB_INGEST)
    if node is None or not node.data:
        return {}
    return {str(t): float(r) for t, r in json.loads(node.data).get("rates", {}).items()}


def set_ingest(client: ZkClient, topic: str, rate: float) -> float:
    """Give `topic` a steady ingest of `rate` bytes per simulated second in total (0 stops it).

    Stored per partition (rate ÷ the topic's partition count now); the per-partition rate is returned.
    """
    if rate < 0:
        raise UsageError("--rate must not be negative")
    numbers = client.children(paths.partitions(topic))
    if rate and not numbers:
        raise UsageError(f"no topic {topic!r} in the lab")
    per_partition = rate / len(numbers) if rate else 0.0
    while True:
        node = client.get(paths.LAB_INGEST)
        rates = {} if node is None or not node.data else json.loads(node.data).get("rates", {})
        if per_partition:
            rates[topic] = per_partition
        else:
            rates.pop(topic, None)
        data = json.dumps({"version": 1, "rates": dict(sorted(rates.items()))}, separators=(",", ":")).encode()
        try:
            if node is None:
                client.create(paths.LAB_INGEST, data, makepath=True)
            else:
                client.set(paths.LAB_INGEST, data, node.stat.version)
            return per_partition
        except (NodeExists, VersionConflict):
            continue
