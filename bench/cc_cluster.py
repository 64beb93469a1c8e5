"""One skewed cluster for bench/vs_cruise_control.py, written once for kops and once for Cruise Control.

The cluster: brokers in racks, half of each rack with twice the disk and network of the other half; topics of
12 to 100 partitions at RF 3, placed one replica per rack (as Kafka's rack-aware assignment does) with every 7th
broker 1.3 times as likely to be chosen, so the cluster starts uneven by count and, as every broker got the same
share, over-full on the small brokers. Sizes follow Zipf's law over topics (s = 1.0) with lognormal noise per
partition; a tenth of the topics are hot and write 20 times as much. No partition's size or write rate exceeds
10 times the mean: a single partition larger than a small broker's room would make the cluster unsolvable for
both tools and say nothing about either. Loads are whole MiB and KiB/s, so kops (bytes) and Cruise Control (MB and
KB/s, binary units, as kops/formats/cruise_control.py reads them) read the same numbers. CPU is 0 everywhere:
kops has no CPU model, and the comparison leaves out Cruise Control's two CPU goals.

Per partition, as Cruise Control's model and kops's capacity model (docs/design/capacity.md §4) both count:
disk = its size on every replica; network in = its write rate on every replica; network out = write rate ×
(followers + consumer fan-out, 1 here) on the leader only.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path

from kops.model import snapshot_format
from kops.model.brokers import Broker
from kops.model.partitions import Partition, PartitionState
from kops.model.snapshot import ControllerInfo, Snapshot
from kops.model.topics import Topic

MIB = 2**20
KIB = 2**10
RF = 3
FANOUT = 1
TOPIC_SIZES = (12, 24, 32, 50, 64, 100)
MEAN_SIZE_MIB = 2048
MEAN_WRITE_KIB = 100
HEAVY_EVERY = 7  # every 7th broker is more likely to receive a replica in the initial placement
HEAVY_WEIGHT = 1.3
TARGET_UTILIZATION = {"disk": 0.40, "nw_in": 0.35, "nw_out": 0.35}  # mean over the cluster, before any move
CLIP = 10.0  # no partition above 10 times the mean size or write rate

TP = tuple[str, int]
Assignment = dict[TP, tuple[int, ...]]  # every partition's replicas, its leader first


@dataclass(frozen=True)
class Cluster:
    """What both tools are given: racks, capacities (MiB, KiB/s), the initial assignment and each partition's
    load. `assignment` lists each partition's leader first."""

    name: str
    racks: dict[int, str]
    disk: dict[int, int]  # MiB
    nw_in: dict[int, int]  # KiB/s
    nw_out: dict[int, int]  # KiB/s
    assignment: Assignment
    size: dict[TP, int]  # MiB
    write: dict[TP, int]  # KiB/s

    @property
    def brokers(self) -> list[int]:
        return sorted(self.racks)

    def nw_out_load(self, tp: TP) -> int:
        """The leader's network out: each follower's fetch plus the consumers'."""
        return self.write[tp] * (len(self.assignment[tp]) - 1 + FANOUT)


def _clipped(values: list[float], mean: float) -> list[int]:
    """Scaled to `mean`, clipped at CLIP × mean, whole units of at least 1."""
    scale = mean * len(values) / sum(values)
    return [max(1, round(min(v * scale, CLIP * mean))) for v in values]


def _topics(partitions: int, rng: random.Random) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    left = partitions
    while left > 0:
        count = min(left, rng.choice(TOPIC_SIZES))
        out.append((f"topic-{len(out):04d}", count))
        left -= count
    return out


def _loads(topics: list[tuple[str, int]], rng: random.Random) -> tuple[dict[TP, int], dict[TP, int]]:
    """Sizes: Zipf over topics, lognormal per partition; write rates: a tenth of the topics hot."""
    ranks = list(range(1, len(topics) + 1))
    rng.shuffle(ranks)
    hot = set(rng.sample(range(len(topics)), max(1, len(topics) // 10)))
    tps, sizes, writes = [], [], []
    for i, (name, count) in enumerate(topics):
        weight = 1.0 / ranks[i]
        heat = (20.0 if i in hot else 1.0) * rng.lognormvariate(0.0, 0.7)
        for p in range(count):
            tps.append((name, p))
            sizes.append(weight * rng.lognormvariate(0.0, 0.5))
            writes.append(heat * rng.lognormvariate(0.0, 0.5))
    return dict(zip(tps, _clipped(sizes, MEAN_SIZE_MIB))), dict(zip(tps, _clipped(writes, MEAN_WRITE_KIB)))


def _place(racks: dict[int, str], tps: list[TP], rng: random.Random) -> Assignment:
    """One replica per rack, RF racks drawn at random, the brokers in a rack weighted; the leader is the first."""
    by_rack: dict[str, list[int]] = {}
    for b in sorted(racks):
        by_rack.setdefault(racks[b], []).append(b)
    names = sorted(by_rack)
    weights = {b: HEAVY_WEIGHT if b % HEAVY_EVERY == 0 else 1.0 for b in racks}
    out: Assignment = {}
    for tp in tps:
        chosen = rng.sample(names, min(RF, len(names)))
        out[tp] = tuple(rng.choices(by_rack[r], [weights[b] for b in by_rack[r]])[0] for r in chosen)
    return out


def generate(brokers: int, partitions: int, racks: int | None = None, seed: int = 7) -> Cluster:
    """The seeded cluster; `racks` defaults to a tenth of the brokers, between 3 and 10."""
    rng = random.Random(seed)
    rack_count = racks or max(RF, min(10, brokers // 10))
    rack_of = {b: f"rack-{(b - 1) % rack_count}" for b in range(1, brokers + 1)}
    big = {b: ((b - 1) // rack_count) % 2 == 1 for b in rack_of}  # half of each rack
    topics = _topics(partitions, rng)
    size, write = _loads(topics, rng)
    assignment = _place(rack_of, list(size), rng)
    units = sum(2 if big[b] else 1 for b in rack_of)
    totals = {"disk": RF * sum(size.values()), "nw_in": RF * sum(write.values()),
              "nw_out": sum(write[tp] * (RF - 1 + FANOUT) for tp in write)}
    small = {k: totals[k] / TARGET_UTILIZATION[k] / units for k in totals}
    cap = {k: {b: math.ceil(small[k] * (2 if big[b] else 1)) for b in rack_of} for k in small}
    name = f"{brokers}b-{partitions}p"
    return Cluster(name, rack_of, cap["disk"], cap["nw_in"], cap["nw_out"], assignment, size, write)


def snapshot_of(cluster: Cluster) -> Snapshot:
    """The cluster as `kops state` would record it: every replica in sync, the first replica leading."""
    brokers = tuple(Broker(b, f"broker-{b}", 9092, (f"PLAINTEXT://broker-{b}:9092",), cluster.racks[b])
                    for b in cluster.brokers)
    parts: dict[str, dict[int, Partition]] = {}
    for (topic, p), replicas in cluster.assignment.items():
        parts.setdefault(topic, {})[p] = Partition(replicas, state=PartitionState(replicas[0], 1, replicas, 1))
    topics = {name: Topic(name, dict(sorted(ps.items()))) for name, ps in sorted(parts.items())}
    return Snapshot(cluster.name, ControllerInfo(cluster.brokers[0], 1), brokers, topics)


def write_kops(cluster: Cluster, folder: Path) -> dict[str, Path]:
    """kops's own files: kops-snapshot/1, a sizes summary (JSON lines with `bytes` and `write_bytes_per_s`), and
    the capacities as Cruise Control's capacity file, which `kops plan/rebalance --capacity FILE` reads."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"snapshot": folder / "snapshot.json", "sizes": folder / "sizes.json",
             "capacity": folder / "capacity.json"}
    paths["snapshot"].write_bytes(snapshot_format.dumps(snapshot_of(cluster)))
    with paths["sizes"].open("w", encoding="utf-8") as out:
        for (topic, p), mib in sorted(cluster.size.items()):
            out.write(json.dumps({"topic": topic, "partition": p, "bytes": mib * MIB,
                                  "write_bytes_per_s": cluster.write[(topic, p)] * KIB}) + "\n")
    entries = [{"brokerId": str(b), "capacity": {"DISK": str(cluster.disk[b]), "CPU": "100",
                                                 "NW_IN": str(cluster.nw_in[b]), "NW_OUT": str(cluster.nw_out[b])}}
               for b in cluster.brokers]
    paths["capacity"].write_text(json.dumps({"brokerCapacities": entries}, indent=1), encoding="utf-8")
    return paths


CSV_HEADER = "topic,partition,broker,position,is_leader,cpu,disk,nw_in,nw_out"


def write_cruise_control(cluster: Cluster, folder: Path) -> None:
    """The anchor's `--load` files: brokers.csv (capacities: CPU %, disk MB, network KB/s) and replicas.csv (one
    row per replica; a follower's network out is 0)."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = ["broker,rack,cpu,disk,nw_in,nw_out"]
    rows += [f"{b},{cluster.racks[b]},100,{cluster.disk[b]},{cluster.nw_in[b]},{cluster.nw_out[b]}"
             for b in cluster.brokers]
    (folder / "brokers.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (folder / "replicas.csv").write_text(assignment_csv(cluster, cluster.assignment), encoding="utf-8")


def assignment_csv(cluster: Cluster, assignment: Assignment) -> str:
    """An assignment in the anchor's replicas.csv columns (the leader at position 0), loads included."""
    lines = [CSV_HEADER]
    for (topic, p), replicas in sorted(assignment.items()):
        tp = (topic, p)
        for i, b in enumerate(replicas):
            out = cluster.nw_out_load(tp) if i == 0 else 0
            lines.append(f"{topic},{p},{b},{i},{1 if i == 0 else 0},0,{cluster.size[tp]},{cluster.write[tp]},{out}")
    return "\n".join(lines) + "\n"


def read_assignment(path: Path) -> Assignment:
    """An assignment from replicas.csv columns: replicas by position, the row marked leader moved first (Cruise
    Control keeps its leader at position 0; this does not rely on it)."""
    rows: dict[TP, list[tuple[int, int, bool]]] = {}
    with path.open(encoding="utf-8") as lines:
        next(lines)
        for line in lines:
            if line.strip():
                c = line.rstrip("\n").split(",")
                rows.setdefault((c[0], int(c[1])), []).append((int(c[3]), int(c[2]), c[4].strip() == "1"))
    out: Assignment = {}
    for tp, replicas in rows.items():
        ordered = [b for _, b, _ in sorted(replicas)]
        leaders = [b for _, b, lead in replicas if lead]
        if leaders:
            ordered.remove(leaders[0])
            ordered.insert(0, leaders[0])
        out[tp] = tuple(ordered)
    return out
