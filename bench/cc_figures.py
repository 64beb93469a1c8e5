"""The one function that judges both tools: every figure of bench/vs_cruise_control.py from an assignment.

`figures(cluster, after)` reads only the cluster (capacities, racks, loads, the starting assignment) and the
assignment a tool ended with; neither tool's own statistics enter. Loads follow the assignment the way both
tools' models move them: a replica carries its partition's size and write rate wherever it goes, and the leader
(the first replica) carries the network out. Utilizations are percent of each broker's capacity; spreads are
max − min over brokers; topic spread is, per topic, max − min of its replicas per broker (brokers holding none
count as 0), averaged over topics, as Cruise Control's TopicReplicaDistributionGoal sees every broker.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from bench.cc_cluster import MIB, Assignment, Cluster
from kops.planner.lower_bounds import count_bound, fair_shares

LIMIT = 0.8  # each capacity's limit: Cruise Control's default capacity thresholds, and kops's (capacity.md §1)


def invalid(cluster: Cluster, after: Assignment) -> list[str]:
    """Why `after` is not a valid result for `cluster` (empty: valid): the same partitions, each keeping its
    replication factor, no broker twice in a partition, only the cluster's brokers."""
    problems = []
    if set(after) != set(cluster.assignment):
        missing, extra = set(cluster.assignment) - set(after), set(after) - set(cluster.assignment)
        problems.append(f"partitions differ: {len(missing)} missing, {len(extra)} unknown")
    known = set(cluster.racks)
    for tp, replicas in sorted(after.items()):
        before = cluster.assignment.get(tp)
        if before is not None and len(replicas) != len(before):
            problems.append(f"{tp[0]}-{tp[1]}: replication factor {len(before)} became {len(replicas)}")
        if len(set(replicas)) != len(replicas):
            problems.append(f"{tp[0]}-{tp[1]}: a broker twice in {replicas}")
        if not set(replicas) <= known:
            problems.append(f"{tp[0]}-{tp[1]}: unknown broker in {replicas}")
    return problems


def _spread(name: str, values: list[float], digits: int = 2) -> dict[str, float]:
    return {f"{name}_max": round(max(values), digits), f"{name}_min": round(min(values), digits),
            f"{name}_std": round(statistics.pstdev(values), digits)}


def _per_broker(cluster: Cluster, after: Assignment) -> dict[str, dict[int, float]]:
    """Each broker's loads under `after`: disk, network in and out, potential network out (every replica as if
    it led: Cruise Control's PotentialNwOutGoal), leader bytes in, replicas, leaders."""
    load: dict[str, dict[int, float]] = {k: {b: 0.0 for b in cluster.brokers} for k in
                                         ("disk", "nw_in", "nw_out", "potential", "leader_in", "replicas", "leaders")}
    for tp, replicas in after.items():
        out = cluster.nw_out_load(tp)
        for b in replicas:
            load["disk"][b] += cluster.size[tp]
            load["nw_in"][b] += cluster.write[tp]
            load["potential"][b] += out
            load["replicas"][b] += 1
        load["nw_out"][replicas[0]] += out
        load["leader_in"][replicas[0]] += cluster.write[tp]
        load["leaders"][replicas[0]] += 1
    return load


def _topic_spread(cluster: Cluster, after: Assignment) -> tuple[float, int]:
    """Mean and max over topics of (max − min) replicas per broker, every broker counted."""
    counts: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for (topic, _), replicas in after.items():
        for b in replicas:
            counts[topic][b] += 1
    brokers = len(cluster.brokers)
    spreads = [max(c.values()) - (min(c.values()) if len(c) == brokers else 0) for c in counts.values()]
    return round(sum(spreads) / len(spreads), 3), max(spreads)


def _moves(cluster: Cluster, after: Assignment) -> dict[str, int]:
    """What it takes to get from the start to `after`: replicas copied, their bytes, and leadership changes of
    partitions whose replica set stayed (a moved partition's new leader comes with its move)."""
    replica_moves = bytes_moved = leader_moves = 0
    for tp, replicas in after.items():
        before = cluster.assignment[tp]
        added = len(set(replicas) - set(before))
        replica_moves += added
        bytes_moved += added * cluster.size[tp] * MIB
        if not added and replicas[0] != before[0]:
            leader_moves += 1
    return {"replica_moves": replica_moves, "bytes_moved": bytes_moved, "leader_moves": leader_moves}


def _violations(cluster: Cluster, after: Assignment, load: dict[str, dict[int, float]]) -> dict[str, int]:
    """Rack awareness (a partition on fewer racks than its replicas, where the racks allow) and capacity (a
    broker's disk, network in or out above LIMIT of its capacity)."""
    racks = len(set(cluster.racks.values()))
    rack = sum(1 for r in after.values() if len({cluster.racks[b] for b in r}) < min(len(r), racks))
    capacity = sum(1 for name, cap in (("disk", cluster.disk), ("nw_in", cluster.nw_in), ("nw_out", cluster.nw_out))
                   for b in cluster.brokers if load[name][b] > LIMIT * cap[b])
    return {"rack_violations": rack, "capacity_violations": capacity, "hard_violations": rack + capacity}


def figures(cluster: Cluster, after: Assignment) -> dict[str, float | int]:
    """Every figure of the comparison, from `after` alone (and the cluster it started from)."""
    load = _per_broker(cluster, after)
    out: dict[str, float | int] = {}
    for name, key, cap in (("disk", "disk", cluster.disk), ("network_in", "nw_in", cluster.nw_in),
                           ("network_out", "nw_out", cluster.nw_out),
                           ("network_out_potential", "potential", cluster.nw_out),
                           ("leader_bytes_in", "leader_in", cluster.nw_in)):
        out |= _spread(name, [100.0 * load[key][b] / cap[b] for b in cluster.brokers])
    for name, key in (("replicas", "replicas"), ("leaders", "leaders")):
        values = [load[key][b] for b in cluster.brokers]
        out |= _spread(name, values) | {name.rstrip("s") + "_spread": int(max(values) - min(values))}
    out["topic_replica_spread"], out["topic_replica_spread_max"] = _topic_spread(cluster, after)
    return out | _violations(cluster, after, load) | _moves(cluster, after)


def bounds(cluster: Cluster) -> dict[str, float | int]:
    """The lowest peak any valid assignment of `cluster` reaches per figure (kops/planner/lower_bounds.py): what
    neither tool can beat, so each tool's figure reads against what racks and whole partitions allow. Network out
    and leader bytes in follow leadership, which any replica may take: their bound is the mean utilization or the
    largest partition over the largest capacity. Topic spread: a topic whose replicas do not divide evenly over
    the brokers spreads by at least 1."""
    factors = {tp: len(r) for tp, r in cluster.assignment.items()}
    racks: dict[int, str | None] = dict(cluster.racks)
    pool: dict[int, str | None] = dict.fromkeys(cluster.racks)

    def peak(loads: dict, capacity: dict[int, int], by_racks: bool, replicated: bool) -> float:
        items = [(float(loads[tp]), factors[tp] if replicated else 1) for tp in cluster.assignment]
        found = fair_shares(items, racks if by_racks else pool, {b: float(c) for b, c in capacity.items()})
        return round(100.0 * found.bound, 2)

    out_load = {tp: cluster.nw_out_load(tp) for tp in cluster.assignment}
    per_topic: dict[str, int] = defaultdict(int)
    for (topic, _), f in factors.items():
        per_topic[topic] += f
    brokers = len(cluster.brokers)
    return {"disk_max": peak(cluster.size, cluster.disk, True, True),
            "network_in_max": peak(cluster.write, cluster.nw_in, True, True),
            "network_out_max": peak(out_load, cluster.nw_out, False, False),
            "leader_bytes_in_max": peak(cluster.write, cluster.nw_in, False, False),
            "replicas_max": count_bound(factors.values(), racks),
            "leaders_max": count_bound([1] * len(factors), pool),
            "topic_replica_spread": round(sum(1 for n in per_topic.values() if n % brokers) / len(per_topic), 3)}
