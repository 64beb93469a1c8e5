"""No acknowledged record lost, at a larger volume than the test (tests/integration/test_no_loss.py).

A real Kafka cluster of 4 brokers; a topic of 12 partitions at RF 3 with min.insync.replicas 2; an acks=all,
idempotent producer (librdkafka) numbering records per partition at --rate records/s all along; `kops apply` of
a decommission plus RF change in batches; a leader of the first batch killed with SIGKILL mid-batch; the
apply's health stop; the broker restarted; `kops apply --resume` to the end; then every partition read back
(kafka-python). One JSON line per engine: engine, acknowledged, consumed, lost, duplicates (and out_of_order,
seconds).

Engines: kafka-3.9 (kops through ZooKeeper). kafka-4 joins when the Admin-API transport lands.

Usage: python bench/no_loss.py [--rate 2000] [--megabytes 8]
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

from kops.cli.main import main as kops_main
from kops.kafka import admin, paths
from kops.kafka.client import ZkClient, ZkSettings
from kops.kafka.reader import read_snapshot
from kops.lab.delivery import SequenceProducer, compare, read_back
from kops.lab.kafka_admin import produce
from kops.lab.kafka_lab import KafkaLab

TOPIC = "ledger"
PARTITIONS = 12
PLAYBOOK = """- hosts: all
  topics: [{name: ledger, config: {min.insync.replicas: "2"}}]
  brokers: {decommission: [4]}
  execution: {throttle: 4MiB/s, batch: {max_partitions: 4}}
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


def run(engine: str, work: Path, rate: float, megabytes: float) -> dict[str, object]:
    lab = KafkaLab(work / engine, detached=False)
    state = lab.up(engine, brokers=4, racks=2)
    try:
        assert state.connect is not None, "kops reaches kafka-4 through the Admin API (not yet)"
        with ZkClient(ZkSettings(state.connect)) as zk:
            admin.create_topic(zk, TOPIC, {p: tuple((p + k) % 4 + 1 for k in range(3)) for p in range(PARTITIONS)},
                               config={"min.insync.replicas": "2"})
            wait(lambda: all(p.state and p.state.leader > 0 for p in read_snapshot(zk).topics[TOPIC].partitions.values()),
                 "leaders")
            time.sleep(1.0)
            produce(state.bootstrap, TOPIC, int(megabytes * PARTITIONS * 1024 * 1024))
            book, plan = work / "pb.yml", work / f"{engine}.plan.json"
            book.write_text(PLAYBOOK)
            assert kops(["plan", str(book), "-z", state.connect, "-o", str(plan), "--format", "json"]) == 0
            started = time.monotonic()
            producer = SequenceProducer(state.bootstrap, TOPIC, PARTITIONS, rate=rate).start()
            apply = subprocess.Popen([sys.executable, "-m", "kops.cli.main", "apply", str(plan), "-z", state.connect,
                                      "--yes", "--format", "json", "--poll", "0.2"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            wait(lambda: zk.exists(paths.REASSIGN_PARTITIONS) is not None, "first batch running")
            moving = read_snapshot(zk).in_flight()[0]
            victim = read_snapshot(zk).topics[moving.topic].partitions[moving.partition].state.leader  # type: ignore[union-attr]  # set just above
            lab.kill_broker(victim)
            _, err = apply.communicate(timeout=300)
            assert apply.returncode == 3, err
            lab.start_broker(victim)
            wait(lambda: not read_snapshot(zk).under_replicated(), "in sync again")
            assert kops(["apply", "--resume", str(plan), "-z", state.connect, "--yes", "--format", "json",
                         "--poll", "0.2"]) == 0
            acks = producer.stop()
        verdict = compare(acks, read_back(state.bootstrap, TOPIC, PARTITIONS, timeout=300))
        return {"engine": engine, **verdict.as_dict(), "seconds": round(time.monotonic() - started, 1),
                "failed_sends": acks.failed}
    finally:
        lab.down()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=2000.0, help="records per second")
    parser.add_argument("--megabytes", type=float, default=8.0, help="data per partition before the apply")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kops-no-loss-") as tmp:
        for engine in ("kafka-3.9",):
            print(json.dumps(run(engine, Path(tmp), args.rate, args.megabytes)), flush=True)


if __name__ == "__main__":
    main()
