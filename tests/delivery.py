"""Produce, consume and validate, as Kafka's own reassignment system test does: no acknowledged record lost.

`SequenceProducer` (librdkafka, through confluent-kafka: an independent client) writes records numbered per
partition with acks=all and idempotence, and keeps every acknowledgement. `read_back` (kafka-python) reads
every partition from its start to its end offset. `compare` says what was lost, duplicated or out of order.
Used by tests/integration/test_no_loss.py and bench/no_loss.py; test code, since confluent-kafka is a
development dependency only (kops never imports it).
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Acks:
    """What the producer was told: per partition, the sequence numbers acknowledged; and the failures."""

    acknowledged: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    failed: int = 0
    first_error: str | None = None

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.acknowledged.values())


class SequenceProducer:
    """A background thread producing `partition:seq` records to every partition in turn, at about `rate`/s.

    Batched for 50 ms (linger.ms), as producers in production are: at 5 ms, each of a few hundred records a second
    went in a request of its own, and with acks=all every one woke the followers' fetches; the four brokers of
    test_no_loss spent 1.3 cores serving that (26 CPU s per 20 s), 0.6 at 50 ms. The same records, acknowledged
    by all in-sync replicas, idempotent, at the same rate."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: float = 500.0, size: int = 512) -> None:
        from confluent_kafka import Producer

        self.topic, self.partitions, self.rate, self.size = topic, partitions, rate, size
        self.acks = Acks()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                   "linger.ms": 50, "message.timeout.ms": 120000, "client.id": "kops-no-loss",
                                   "log_level": 0})
        self._thread = threading.Thread(target=self._run, name="sequence-producer", daemon=True)

    def start(self) -> SequenceProducer:
        self._thread.start()
        return self

    def _delivered(self, err: object, msg: Any) -> None:  # msg: confluent_kafka.Message
        with self._lock:
            if err is not None:
                self.acks.failed += 1
                self.acks.first_error = self.acks.first_error or str(err)
                return
            seq = _sequence(msg.value())
            self.acks.acknowledged[msg.partition()].append(int(seq or 0))

    def _run(self) -> None:
        seq = [0] * self.partitions
        pad = b"x" * self.size
        interval = 1.0 / self.rate
        next_at = time.monotonic()
        while not self._stop.is_set():
            p = sum(seq) % self.partitions
            value = f"{p}:{seq[p]} ".encode() + pad
            try:
                self._producer.produce(self.topic, value=value, partition=p, on_delivery=self._delivered)
                seq[p] += 1
            except BufferError:
                self._producer.poll(0.1)
                continue
            self._producer.poll(0)
            next_at += interval
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)

    def stop(self, timeout: float = 120.0) -> Acks:
        self._stop.set()
        self._thread.join(timeout)
        self._producer.flush(timeout)
        return self.acks


def read_back(bootstrap: str, topic: str, partitions: int, timeout: float = 120.0) -> dict[int, list[int]]:
    """Every record's sequence number, per partition, in log order (kafka-python, read_committed not needed)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","), enable_auto_commit=False, group_id=None,
                             client_id="kops-no-loss-reader", fetch_max_bytes=8 * 1024 * 1024)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        found: dict[int, list[int]] = defaultdict(list)
        deadline = time.monotonic() + timeout
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            if time.monotonic() > deadline:
                raise TimeoutError(f"read back stalled at {[consumer.position(tp) for tp in tps]} of {ends}")
            for tp, records in consumer.poll(timeout_ms=1000).items():
                for record in records:
                    seq = _sequence(record.value)
                    if seq is not None:  # other records (data written before the test) are not ours to count
                        found[tp.partition].append(seq)
        return found
    finally:
        consumer.close()


def _sequence(value: bytes | None) -> int | None:
    head = (value or b"")[:32].split(b" ", 1)[0].split(b":")
    if len(head) != 2 or not head[0].isdigit() or not head[1].isdigit():
        return None
    return int(head[1])


@dataclass(frozen=True)
class Verdict:
    acknowledged: int
    consumed: int
    lost: int
    duplicates: int
    out_of_order: int

    def as_dict(self) -> dict[str, int]:
        return {"acknowledged": self.acknowledged, "consumed": self.consumed, "lost": self.lost,
                "duplicates": self.duplicates, "out_of_order": self.out_of_order}


def compare(acks: Acks, consumed: dict[int, list[int]]) -> Verdict:
    lost = duplicates = out_of_order = 0
    for partition in set(acks.acknowledged) | set(consumed):
        seen = consumed.get(partition, [])
        present = set(seen)
        lost += sum(1 for seq in acks.acknowledged.get(partition, []) if seq not in present)
        duplicates += len(seen) - len(present)
        out_of_order += sum(1 for a, b in zip(seen, seen[1:]) if b < a)
    return Verdict(acks.count, sum(len(v) for v in consumed.values()), lost, duplicates, out_of_order)
