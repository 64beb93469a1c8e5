"""No acknowledged record lost, at a larger volume than the test (tests/integration/test_no_loss.py).

A real Kafka cluster of 4 brokers; a topic of 12 partitions at RF 3 with min.insync.replicas 2; an acks=all,
idempotent producer (librdkafka) numbering records per partition at --rate records/s all along; `kops apply` of
a decommission, in batches or rolling; a leader of a move in flight killed with SIGKILL; the apply's health stop;
the broker restarted; `kops apply --resume` to the end; then every partition read back (kafka-python). One JSON
line per run: engine, transport, mode, acknowledged, consumed, lost, duplicates (and out_of_order, seconds).

Runs: kafka-3.9 through ZooKeeper (`-z`, batches); kafka-4 in KRaft through the Admin API (`-b`), in batches and
rolling. The cluster is watched through Kafka's Admin API on both. On Kafka 4, broker 1 is also the (single)
quorum controller: the broker killed is a leader of a move in flight other than broker 1.

Usage: python bench/no_loss.py [--rate 2000] [--megabytes 8] [--runs kafka-3.9:batches,kafka-4:batches,...]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.delivery: the producer and the reader

from kops.cli.main import main as kops_main
from kops.lab.kafka_client import create_topics, first_answer, layout, produce
from kops.lab.kafka_lab import KafkaLab
from tests.delivery import SequenceProducer, compare, read_back

TOPIC = "ledger"
PARTITIONS = 12
RUNS = ("kafka-3.9:batches", "kafka-4:batches", "kafka-4:rolling")
PLAYBOOK = """- hosts: all
  topics: [{name: ledger, config: {min.insync.replicas: "2"}}]
  brokers: {decommission: [4]}
  execution: {throttle: 4MiB/s, batch: {max_partitions: 4}MODE}
"""


def kops(argv: list[str]) -> int:
    """The kops CLI in-process, its own output kept out of the benchmark's JSON lines."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return kops_main(argv)


def wait(check, what: str, timeout: float = 180.0) -> None:  # type: ignore[no-untyped-def]  # a helper over callables of any shape
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.2)


def in_flight(bootstrap: str) -> list[tuple[str, int]]:
    """The partitions Kafka is reassigning (KIP-455's list, on ZooKeeper mode and KRaft alike)."""
    return sorted(first_answer(bootstrap, lambda c: c.list_partition_reassignments()))


def in_sync(bootstrap: str) -> bool:
    rows = layout(bootstrap).get(TOPIC, {}).values()
    return all(set(p["isr"]) == set(p["replicas"]) for p in rows)  # type: ignore[call-overload]  # JSON rows


def victim(bootstrap: str, moving: list[tuple[str, int]]) -> int:
    """The leader of a partition in flight, broker 1 (Kafka 4's quorum controller) only where no other is."""
    leaders = [int(layout(bootstrap)[t][p]["leader"]) for t, p in moving]  # type: ignore[call-overload]  # JSON row
    return next((b for b in leaders if b != 1), leaders[0])


def create(bootstrap: str) -> None:
    """The ledger topic, every leader elected, then `--megabytes` per partition of data already there."""
    spec = {TOPIC: {"assignments": {p: [(p + k) % 4 + 1 for k in range(3)] for p in range(PARTITIONS)},
                    "configs": {"min.insync.replicas": "2"}}}
    create_topics(bootstrap, spec)

    def elected() -> bool:
        rows = layout(bootstrap).get(TOPIC, {})
        return len(rows) == PARTITIONS and all(int(p["leader"]) > 0 for p in rows.values())  # type: ignore[call-overload]  # JSON rows

    wait(elected, "leaders")


def run(engine: str, mode: str, work: Path, rate: float, megabytes: float) -> dict[str, object]:
    lab = KafkaLab(work / f"{engine}-{mode}", detached=False)
    state = lab.up(engine, brokers=4, racks=2)
    bootstrap = state.bootstrap
    where = ["-z", state.connect] if state.connect else ["-b", bootstrap, "--session-timeout", "30"]
    try:
        create(bootstrap)
        produce(bootstrap, TOPIC, int(megabytes * PARTITIONS * 1024 * 1024))
        book, plan = work / "pb.yml", work / f"{engine}-{mode}.plan.json"
        book.write_text(PLAYBOOK.replace("MODE", ", mode: rolling" if mode == "rolling" else ""))
        assert kops(["plan", str(book), *where[:2], "-o", str(plan), "--format", "json"]) == 0
        started = time.monotonic()
        producer = SequenceProducer(bootstrap, TOPIC, PARTITIONS, rate=rate).start()
        apply = subprocess.Popen([sys.executable, "-m", "kops.cli.main", "apply", str(plan), *where, "--yes",
                                  "--format", "json", "--poll", "0.2"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait(lambda: bool(in_flight(bootstrap)), "first move in flight")
        killed = victim(bootstrap, in_flight(bootstrap))
        lab.kill_broker(killed)
        _, err = apply.communicate(timeout=300)
        assert apply.returncode == 3, err
        lab.start_broker(killed)
        wait(lambda: in_sync(bootstrap), "in sync again")
        assert kops(["apply", "--resume", str(plan), *where, "--yes", "--format", "json", "--poll", "0.2"]) == 0
        acks = producer.stop()
        verdict = compare(acks, read_back(bootstrap, TOPIC, PARTITIONS, timeout=300))
        return {"engine": engine, "transport": "zookeeper" if state.connect else "admin-api", "mode": mode,
                **verdict.as_dict(), "seconds": round(time.monotonic() - started, 1), "failed_sends": acks.failed,
                "killed": killed}
    finally:
        lab.down()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=2000.0, help="records per second")
    parser.add_argument("--megabytes", type=float, default=8.0, help="data per partition before the apply")
    parser.add_argument("--runs", default=",".join(RUNS), help="engine:mode pairs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kops-no-loss-") as tmp:
        for pair in args.runs.split(","):
            engine, mode = pair.split(":")
            print(json.dumps(run(engine, mode, Path(tmp), args.rate, args.megabytes)), flush=True)


if __name__ == "__main__":
    main()
