"""kops beside Kafka's own kafka-reassign-partitions, on one real Kafka 3.9 cluster, same data, same throttle.

Scenarios (each run on a freshly created topic with the same layout and the same bytes):
  decommission   6 brokers, a topic spread over all six; move everything off broker 6
  add-brokers    6 brokers, a topic on brokers 1-4 only; spread it over all six (brokers 5 and 6 are "added")
kops:  `kops plan` of the playbook, then `kops apply` (batches, throttle, election of preferred leaders).
kops-rolling: the same plan applied `--rolling` through the Admin API (KIP-455 accepts moves while others run;
       through ZooKeeper, Kafka 3.9 has no KIP-236 queue and kops would run batches).
kafka: `--generate` for the broker list, `--execute --throttle`, `--verify` until done (it clears its throttles).

One JSON line per tool and scenario: tool, scenario, replicas_moved, bytes_moved (the moved replicas' sizes
from DescribeLogDirs before the move), seconds (start to layout reached and throttles gone), urp_seconds
(under-replicated partition-seconds, sampled every 0.25 s through the Admin API), max_leaders (most leaders on
one broker afterwards).

Usage: python bench/vs_kafka_tool.py [--partitions 24] [--megabytes 4] [--throttle 8MiB/s]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
import threading
import time
from pathlib import Path

from kops.cli.main import main as kops_main
from kops.lab.kafka_client import admin_client, layout, produce
from kops.lab.kafka_lab import KafkaLab
from kops.units import parse_rate
from kops.zk_layout import tool_writes
from kops.zk_layout.client import ZkClient, ZkSettings
from kops.zk_layout.reader import read_snapshot

REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
TOPIC = "bench"


def kops(argv: list[str]) -> int:
    """The kops CLI in-process, its own output kept out of the benchmark's JSON lines."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return kops_main(argv)


def placements(scenario: str, partitions: int) -> dict[int, tuple[int, ...]]:
    brokers = list(range(1, 7)) if scenario == "decommission" else [1, 2, 3, 4]
    n = len(brokers)
    return {p: tuple(brokers[(p + k) % n] for k in range(3)) for p in range(partitions)}


def playbook(scenario: str, throttle: str) -> str:
    brokers = "{decommission: [6]}" if scenario == "decommission" else "{add: [5, 6]}"
    return (f"- hosts: all\n  topics: [{{name: {TOPIC}}}]\n  brokers: {brokers}\n"
            f"  execution: {{throttle: {throttle}, batch: {{max_partitions: 12}}}}\n")


class UrpSampler(threading.Thread):
    """Under-replicated partition-seconds, sampled through Kafka's Admin API."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.total, self.stop = bootstrap, 0.0, threading.Event()

    def run(self) -> None:
        last = time.monotonic()
        while not self.stop.is_set():
            try:
                found = layout(self.bootstrap).get(TOPIC, {})
                urp = sum(1 for p in found.values() if len(p["isr"]) < len(p["replicas"]))  # type: ignore[arg-type]  # plain JSON rows
            except Exception:  # noqa: BLE001 - a sample lost to a busy broker is skipped
                urp = 0
            now = time.monotonic()
            self.total += urp * (now - last)
            last = now
            time.sleep(0.25)


def prepare(lab: KafkaLab, connect: str, bootstrap: str, scenario: str, partitions: int, megabytes: float) -> None:
    with ZkClient(ZkSettings(connect)) as zk:
        if TOPIC in read_snapshot(zk).topics:
            tool_writes.delete_topic(zk, TOPIC)
            _wait(lambda: TOPIC not in read_snapshot(zk).topics and not zk.exists(f"/admin/delete_topics/{TOPIC}"))
        tool_writes.create_topic(zk, TOPIC, placements(scenario, partitions))
        # one metadata read per check: two brokers answering two reads may disagree on whether the topic exists
        _wait(lambda: (rows := layout(bootstrap).get(TOPIC)) is not None and all(
            p["leader"] >= 0 for p in rows.values()))  # type: ignore[operator]  # plain JSON rows
    produce(bootstrap, TOPIC, int(megabytes * partitions * 1024 * 1024))
    _wait(lambda: all(len(p["isr"]) == 3 for p in layout(bootstrap)[TOPIC].values()))  # type: ignore[arg-type]  # plain JSON rows


def _wait(check, timeout: float = 120.0) -> None:  # type: ignore[no-untyped-def]  # a helper over callables of any shape
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("bench setup did not settle")
        time.sleep(0.2)


def sizes(bootstrap: str) -> dict[tuple[int, int], int]:
    """(partition, broker) -> bytes on that broker's log dir."""
    with admin_client(bootstrap) as client:
        found = client.describe_log_dirs()
    out: dict[tuple[int, int], int] = {}
    for answer in found:  # kafka-python: one {"broker": id, "log_dirs": [...]} per broker
        for d in answer["log_dirs"]:
            for t in d.get("topics", []):
                if t.get("name") == TOPIC:
                    for p in t["partitions"]:
                        out[(p["partition_index"], answer["broker"])] = p["partition_size"]
    return out


def measure(tool: str, scenario: str, run, before: dict[int, tuple[int, ...]], bootstrap: str,  # type: ignore[no-untyped-def]  # a helper over callables of any shape
            size: dict[tuple[int, int], int]) -> dict[str, object]:
    sampler = UrpSampler(bootstrap)
    sampler.start()
    started = time.monotonic()
    run()
    seconds = time.monotonic() - started
    sampler.stop.set()
    sampler.join()
    after = layout(bootstrap)[TOPIC]
    moved = [(p, b) for p, row in after.items() for b in row["replicas"] if b not in before[p]]  # type: ignore[attr-defined]  # plain JSON rows
    leaders: dict[int, int] = {}
    for row in after.values():
        leaders[row["leader"]] = leaders.get(row["leader"], 0) + 1  # type: ignore[index]  # plain JSON rows
    mean = sum(size.values()) / max(1, len(size))
    return {"tool": tool, "scenario": scenario, "replicas_moved": len(moved),
            "bytes_moved": int(sum(size.get((p, before[p][0]), mean) for p, _ in moved)),
            "seconds": round(seconds, 2), "urp_seconds": round(sampler.total, 2), "max_leaders": max(leaders.values())}


def run_kops(work: Path, where: list[str], scenario: str, throttle: str, *extra: str) -> None:
    book = work / f"{scenario}.yml"
    book.write_text(playbook(scenario, throttle))
    plan = work / f"{scenario}.plan.json"
    assert kops(["plan", str(book), *where, "-o", str(plan), "--format", "json"]) == 0
    assert kops(["apply", str(plan), *where, "--yes", "--format", "json", "--poll", "0.25", *extra]) == 0


def run_kafka(lab: KafkaLab, work: Path, bootstrap: str, scenario: str, throttle: str) -> None:
    dist = lab.distribution()
    topics = work / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": TOPIC}]}))
    brokers = "1,2,3,4,5" if scenario == "decommission" else "1,2,3,4,5,6"
    out = lab.run_tool(dist, REASSIGN, "--bootstrap-server", bootstrap, "--generate",
                       "--topics-to-move-json-file", str(topics), "--broker-list", brokers)
    proposal = work / f"{scenario}.kafka.json"
    proposal.write_text(out.split("Proposed partition reassignment configuration")[1].strip())
    rate = str(int(parse_rate(throttle)))
    lab.run_tool(dist, REASSIGN, "--bootstrap-server", bootstrap, "--execute", "--reassignment-json-file",
                 str(proposal), "--throttle", rate)
    while "still in progress" in lab.run_tool(dist, REASSIGN, "--bootstrap-server", bootstrap, "--verify",
                                              "--reassignment-json-file", str(proposal)):
        time.sleep(0.25)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=24)
    parser.add_argument("--megabytes", type=float, default=4.0)
    parser.add_argument("--throttle", default="8MiB/s")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kops-vs-kafka-") as tmp:
        work = Path(tmp)
        lab = KafkaLab(work / "lab", detached=False)
        state = lab.up("kafka-3.9", brokers=6, racks=3)
        try:
            assert state.connect is not None
            for scenario in ("decommission", "add-brokers"):
                for tool in ("kops", "kops-rolling", "kafka"):
                    prepare(lab, state.connect, state.bootstrap, scenario, args.partitions, args.megabytes)
                    before = {p: row["replicas"] for p, row in layout(state.bootstrap)[TOPIC].items()}
                    size = sizes(state.bootstrap)
                    if tool == "kops":
                        run = lambda s=scenario: run_kops(work, ["-z", state.connect], s, args.throttle)  # noqa: E731 - bound per scenario
                    elif tool == "kops-rolling":
                        run = lambda s=scenario: run_kops(work, ["-b", state.bootstrap], s, args.throttle,  # noqa: E731 - bound per scenario
                                                          "--rolling")
                    else:
                        run = lambda s=scenario: run_kafka(lab, work, state.bootstrap, s, args.throttle)  # noqa: E731 - bound per scenario
                    print(json.dumps(measure(tool, scenario, run, before, state.bootstrap, size)), flush=True)
        finally:
            lab.down()


if __name__ == "__main__":
    main()
