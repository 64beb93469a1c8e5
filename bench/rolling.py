"""Rolling execution against barrier batches on clusters: bench/batching.py's six scenarios scaled to a lab.

Scenarios: expansion (one broker added), decommission (one removed), rebalance (a skewed layout), each with
exponential and Zipf sizes, built as bench/planner.py builds them (6 brokers in 3 racks, 100 partitions at RF 3)
and scaled so the busiest port's lower bound is `--seconds` at the throttle (the planner moves the smallest
replicas that do the job, so a first plan gives the bound and the sizes are rescaled from it). Per engine, scenario and
mode:
a fresh topic with that layout and those bytes, `kops plan` of the playbook, then `kops apply` in batches or
`kops apply --rolling` (same throttle, same plan). Makespan: from the first submission's checkpoint to the last
move done (event times as kops prints them), over the per-port lower bound of the plan's moves (max over brokers
of bytes in or out / throttle, kops.planner.batches.port_times).

Engines: `kops` (the lab's controller and brokers on a real ZooKeeper, time x4 by
default, simulated bytes; the ratio uses simulated seconds: kops's own latencies, in wall seconds, weigh more the
faster the clock) and `kafka-4` (real Kafka 4 in KRaft through the Admin API, real bytes: each plan is made from
the layout's sizes file, as on the kops engine, and only the partitions it moves are filled, the only bytes a port
carries; the whole topic was 24 times more at the defaults).
One JSON line per engine and scenario: engine, scenario, moves, lower_bound_seconds, batch_seconds,
rolling_seconds, batch_ratio, rolling_ratio. Targets (issue 18): rolling_ratio <= 1.05 on the kops engine,
<= 1.15 on real Kafka, and no slower than batches in any scenario.

Usage: python bench/rolling.py [--engines kops,kafka-4] [--seconds 120] [--time-scale 4] [--scenarios ...]
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.batching import sizes_exponential  # noqa: E402 - after the sys.path line above
from bench.planner import build  # noqa: E402 - after the sys.path line above
from kops.cluster.port import Cluster  # noqa: E402 - after the sys.path line above
from kops.model import plan_format  # noqa: E402 - after the sys.path line above
from kops.model.partitions import TopicPartition  # noqa: E402 - after the sys.path line above
from kops.model.plan import Plan  # noqa: E402 - after the sys.path line above
from kops.planner.batches import port_times  # noqa: E402 - after the sys.path line above

BROKERS, RACKS, PARTITIONS, TOPIC = 6, 3, 100, "topic-00000"  # TOPIC: bench/planner.py's name for it
PREFIX = "rolling-"  # each run's topic: rolling-<n>
RUNS = itertools.count(1)
MODES = ("batches", "rolling")
SCENARIOS = [(n, d) for n in ("expansion", "decommission", "rebalance") for d in ("exponential", "zipf")]


@dataclass
class Layout:
    assignment: dict[int, tuple[int, ...]]
    sizes: dict[int, int]
    brokers: int  # to start, the added one included
    playbook: str


def layout(name: str, distribution: str, busiest_bytes: float) -> Layout:
    """The scenario's replicas and sizes, scaled so the heaviest broker moves about `busiest_bytes`."""
    extra = 1 if name == "expansion" else 0
    snap, sizes = build(BROKERS, extra, PARTITIONS, skew=name == "rebalance", racks=RACKS, seed=3)
    if distribution == "exponential":
        sizes = sizes_exponential(sizes)
    topic = snap.topics[TOPIC]
    assignment = {p: part.replicas for p, part in sorted(topic.partitions.items())}
    raw = {p: sizes[TopicPartition(TOPIC, p)] for p in assignment}
    moved_from = 1 if name == "decommission" else None
    heavy = _heaviest_port(assignment, raw, moved_from, name)
    scale = busiest_bytes / max(1, heavy)
    scaled = {p: max(64 * 1024, int(b * scale)) for p, b in raw.items()}
    changes = {"expansion": f"brokers: {{add: [{BROKERS + 1}]}}\n", "decommission": "brokers: {decommission: [1]}\n",
               "rebalance": "rebalance: {goal: replicas, tolerance: 5%}\n"}[name]
    playbook = "- hosts: all\n  topics: [{name: NAME}]\n  " + changes
    return Layout(assignment, scaled, BROKERS + extra, playbook)


def _heaviest_port(assignment: dict[int, tuple[int, ...]], sizes: dict[int, int], leaving: int | None,
                   name: str) -> float:
    """A rough estimate of the busiest port's bytes before planning (the plan gives the real bound later)."""
    if leaving is not None:
        return sum(sizes[p] for p, r in assignment.items() if leaving in r)
    total = sum(sizes[p] * len(r) for p, r in assignment.items())
    return total / (BROKERS + 1) if name == "expansion" else total / BROKERS / 4


class Kops:
    """The CLI in a child process; its JSON event lines stamped as they arrive."""

    @staticmethod
    def run(*args: str) -> list[tuple[float, dict]]:
        process = subprocess.Popen([sys.executable, "-m", "kops.cli.main", *args], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        assert process.stdout is not None
        stamped = [(time.monotonic(), json.loads(line)) for line in process.stdout
                   if line.startswith('{"') and line.rstrip().endswith("}")]  # event lines, not a document
        err = process.stderr.read() if process.stderr else ""
        if process.wait() != 0:
            said = [e for _, e in stamped if e.get("event") in ("error", "stopped", "stalled")] or err.strip()[-500:]
            raise SystemExit(f"kops {' '.join(args[:2])} exited {process.returncode}: {said}")
        return stamped


def makespan(stamped: list[tuple[float, dict]]) -> float:
    """First batch start (or rolling start) to the last batch or move done, wall seconds."""
    starts = [t for t, e in stamped if e["event"] in ("batch_start", "rolling_start")]
    ends = [t for t, e in stamped if e["event"] in ("batch_done", "move_done")]
    return max(ends) - min(starts)


# -- engines ---------------------------------------------------------------------------------------------------

@contextmanager
def kops_engine(work: Path, scale: float) -> Iterator[dict]:
    from kops.cluster.zookeeper import ZkCluster
    from kops.lab import traffic
    from kops.lab.kops_engine import Lab
    from kops.zk_layout import tool_writes
    from kops.zk_layout.reader import read_snapshot

    lab = Lab(work / "kops-lab", detached=False)
    state = lab.up(brokers=BROKERS + 1, racks=RACKS, time_scale=scale)

    def prepare(lay: Layout, topic: str) -> list[str]:  # simulated bytes, all of them: they cost nothing
        with lab.client() as zk:
            _fresh_topic_zk(zk, tool_writes, lay, topic)
            for p, size in lay.sizes.items():
                _retry(lambda p=p, size=size: traffic.produce(zk, topic, size, p))
            _wait(lambda: all(part.state is not None and set(part.state.isr) == set(part.replicas)
                              for part in read_snapshot(zk).topics[topic].partitions.values()))
            _wait_caught_up(ZkCluster(zk), topic, lay)
        return ["-z", state.connect, "--sizes", sizes_file(work, lay, topic)]

    try:
        yield {"prepare": prepare, "load": lambda *_: None, "connect": lambda: ["-z", state.connect], "scale": scale,
               "rate_mib": 2.0}
    finally:
        lab.down()


def _wait_caught_up(cluster: Cluster, topic: str, lay: Layout) -> None:
    """Every follower holds its leader's whole log (a full ISR is not enough: a follower still copying the fill
    keeps the high watermark behind, and a new replica at it joins the ISR at once and copies unthrottled)."""
    replicas = [(TopicPartition(topic, p), b) for p, r in lay.assignment.items() for b in r]
    _wait(lambda: not any(lag > 0 for lag in cluster.lags(replicas).values()))


def sizes_file(work: Path, lay: Layout, topic: str) -> str:
    """The layout's sizes as `kops sizes` writes them."""
    path = work / "sizes.json"
    path.write_text("".join(json.dumps({"topic": topic, "partition": p, "bytes": b, "growth_bytes_per_s": 0.0}) + "\n"
                            for p, b in lay.sizes.items()))
    return str(path)


def _fresh_topic_zk(zk, tool_writes, lay: Layout, topic: str) -> None:  # type: ignore[no-untyped-def]  # lab's client
    """The earlier runs' topics deleted, then `topic` created: a new name each run, so no broker can hold a
    stale log of it (a lab broker may keep one of a deleted topic a while, and its copy would start ahead)."""
    from kops.zk_layout.reader import read_snapshot

    def ours() -> list[str]:
        return [t for t in read_snapshot(zk).topics if t.startswith(PREFIX)]
    for old in ours():
        tool_writes.delete_topic(zk, old)
    _wait(lambda: not ours())
    if zk.exists("/kops") is not None:
        zk.delete("/kops", recursive=True)
    tool_writes.create_topic(zk, topic, lay.assignment)
    _wait(lambda: all(p.state is not None and p.state.leader >= 0
                      for p in read_snapshot(zk).topics[topic].partitions.values()))


@contextmanager
def kafka4_engine(work: Path) -> Iterator[dict]:
    from kops.lab.kafka_client import create_topics, fill, first_answer
    from kops.lab.kafka_client import layout as kafka_layout
    from kops.lab.kafka_lab import KafkaLab

    lab = KafkaLab(work / "kafka4", detached=False)
    state = lab.up("kafka-4", brokers=BROKERS + 1, racks=RACKS)
    bootstrap = state.bootstrap

    def prepare(lay: Layout, topic: str) -> list[str]:
        """The topic, empty: the plan is made from the sizes file, and only what it moves gets bytes (`load`)."""
        def ours() -> list[str]:
            return [t for t in first_answer(bootstrap,
                                            lambda c: c.list_topics()) if t.startswith(PREFIX) or t == "__kops"]
        if ours():
            first_answer(bootstrap, lambda c: c.delete_topics(ours()))
            _wait(lambda: not ours())
        spec = {topic: {"assignments": {p: list(r) for p, r in lay.assignment.items()}}}
        create_topics(bootstrap, spec)
        _wait(lambda: all(p["leader"] >= 0 for p in kafka_layout(bootstrap).get(topic, {0: {"leader": -1}}).values()))
        return ["-b", bootstrap, "--sizes", sizes_file(work, lay, topic)]

    def load(lay: Layout, topic: str, plan: Plan) -> None:
        """Real bytes for the partitions the plan moves, the only ones a port carries: the whole topic was 24
        times more (expansion at the defaults: 5.8 GiB a run, 11 minutes of fill on 2 cores, to move 250 MB)."""
        fill(bootstrap, {topic: {m.partition: lay.sizes[m.partition] for m in plan.moves if m.adding}})
        _wait(lambda: all(len(p["isr"]) == len(p["replicas"]) for p in kafka_layout(bootstrap)[topic].values()))
        time.sleep(2.0)  # log segments flushed: DescribeLogDirs reports what was produced

    try:
        yield {"prepare": prepare, "load": load, "connect": lambda: ["-b", bootstrap], "scale": 1.0, "rate_mib": 2.0}
    finally:
        lab.down()


def _wait(check, timeout: float = 120.0) -> None:  # type: ignore[no-untyped-def]  # callables of any shape
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit("bench setup did not settle")
        time.sleep(0.2)


def _retry(action, attempts: int = 50) -> None:  # type: ignore[no-untyped-def]  # callables of any shape
    for _ in range(attempts):
        try:
            if action() is not False:
                return
        except Exception:  # noqa: BLE001 - a lab broker still starting answers later
            pass
        time.sleep(0.2)
    raise SystemExit("produce did not succeed")


# -- the run ---------------------------------------------------------------------------------------------------

def one(engine: dict, work: Path, name: str, distribution: str, seconds: float) -> dict:
    rate = engine["rate_mib"] * 2**20  # bytes per simulated second
    lay = layout(name, distribution, busiest_bytes=rate * seconds * engine["scale"])  # simulated bytes on kops
    book = lay.playbook + f"  execution: {{throttle: {engine['rate_mib']:g}MiB/s, batch: {{max_partitions: 10}}}}\n"
    bound = _bound(_plan(engine, work, book, lay, "probe"), rate)
    lay = scaled(lay, seconds / bound)  # the planner moves the smallest replicas it can: only its plan knows the bound
    timed: dict[str, float] = {}
    for mode in MODES:
        plan = _plan(engine, work, book, lay, mode)
        bound = _bound(plan, rate)
        extra = ["--rolling"] if mode == "rolling" else []
        stamped = Kops.run("apply", str(plan.path), *engine["connect"](), "--yes", "--format", "json", "--poll", "0.2",
                           *extra)
        timed[mode] = makespan(stamped) * engine["scale"]
    return {"scenario": f"{name}-{distribution}", "moves": len(plan.plan.moves), "lower_bound_seconds": round(bound, 1),
            "batch_seconds": round(timed["batches"], 1), "rolling_seconds": round(timed["rolling"], 1),
            "batch_ratio": round(timed["batches"] / bound, 3), "rolling_ratio": round(timed["rolling"] / bound, 3)}


@dataclass
class Planned:
    path: Path
    plan: Plan


def _plan(engine: dict, work: Path, template: str, lay: Layout, mode: str) -> Planned:
    """A fresh topic with the layout, `kops plan` of the playbook against it with the layout's sizes, then (but
    for the probe) the bytes the plan moves in place."""
    topic = f"{PREFIX}{next(RUNS)}"
    where = engine["prepare"](lay, topic)
    book = work / "pb.yml"
    book.write_text(template.replace("NAME", topic))
    path = work / f"{mode}.json"
    Kops.run("plan", str(book), *where, "-o", str(path), "--format", "json")
    plan = plan_format.loads(path.read_bytes(), str(path))
    if mode != "probe":
        engine["load"](lay, topic, plan)
    return Planned(path, plan)


def _bound(planned: Planned, rate: float) -> float:
    """The per-port lower bound of the plan's copies, simulated seconds."""
    return port_times([m for m in planned.plan.moves if m.adding], rate, rate)[2]


def scaled(lay: Layout, factor: float) -> Layout:
    return Layout(lay.assignment, {p: max(64 * 1024, int(b * factor)) for p, b in lay.sizes.items()}, lay.brokers,
                  lay.playbook)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="kops,kafka-4")
    parser.add_argument("--seconds", type=float, default=120.0, help="the busiest port's lower bound, about")
    parser.add_argument("--time-scale", type=float, default=4.0,
                        help="the kops engine's clock: faster runs, but kops's own latencies grow with it")
    parser.add_argument("--scenarios", default=",".join(f"{n}-{d}" for n, d in SCENARIOS))
    args = parser.parse_args()
    random.seed(3)
    wanted = args.scenarios.split(",")
    for engine_name in args.engines.split(","):
        with tempfile.TemporaryDirectory(prefix=f"kops-rolling-{engine_name}-") as tmp:
            opened = kops_engine(Path(tmp), args.time_scale) if engine_name == "kops" else kafka4_engine(Path(tmp))
            with opened as engine:
                for name, distribution in SCENARIOS:
                    if f"{name}-{distribution}" in wanted:
                        line = one(engine, Path(tmp), name, distribution, args.seconds)
                        print(json.dumps({"engine": engine_name, **line}), flush=True)


if __name__ == "__main__":
    main()
