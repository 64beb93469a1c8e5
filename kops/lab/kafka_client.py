"""The lab's side of the Kafka protocol (kafka-python): is the cluster up, and real records into it.

The lab uses this to wait for brokers and to produce; tests use it to judge what kops did through Kafka
itself. kafka-python's connection warnings (a broker still starting, one just killed) are expected here and
kept off the terminal.
"""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from kafka import KafkaAdminClient, KafkaProducer
from kafka.errors import KafkaError, TopicAlreadyExistsError

from kops.cluster.admin.connection import accepts
from kops.errors import EnvironmentProblem, UsageError

logging.getLogger("kafka").addHandler(logging.NullHandler())
logging.getLogger("kafka").propagate = False

CLIENT_ID = "kops-lab"
T = TypeVar("T")


@contextmanager
def admin_client(bootstrap: str, timeout_ms: int = 10000) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), client_id=CLIENT_ID,
                              request_timeout_ms=timeout_ms)
    try:
        yield client
    finally:
        client.close()


def live_brokers(bootstrap: str) -> set[int] | None:
    """Unfenced brokers in the cluster's metadata, once a controller is known; None while unreachable."""
    try:
        found = first_answer(bootstrap, lambda client: client.describe_cluster(), patience=0)
    except (EnvironmentProblem, ValueError):
        return None
    if found.get("controller_id", -1) in (None, -1):
        return None
    return {int(b["broker_id"]) for b in found["brokers"] if not b.get("is_fenced")}


def first_answer(bootstrap: str, ask: Callable[[KafkaAdminClient], T], timeout_ms: int = 5000,
                 patience: float = 20.0) -> T:
    """`ask` through each bootstrap server alone until one answers: kafka-python sends a request to one node and
    does not fail over when that node is dead (killed) or silent (paused). Rounds go on for `patience` seconds:
    a paused KRaft quorum leader stalls every broker's forwarded requests until the quorum elects another."""
    deadline = time.monotonic() + patience
    while True:
        problems = []
        listed = bootstrap.split(",")
        for server in listed:
            if len(listed) > 1 and not accepts(server, timeout_ms):  # a killed broker: alone, kafka-python retries
                problems.append(f"{server}: connection refused")  # it for the whole timeout, every round
                continue
            try:
                with admin_client(server, timeout_ms=timeout_ms) as client:
                    return ask(client)
            except (KafkaError, OSError) as exc:
                problems.append(f"{server}: {type(exc).__name__}")
        if time.monotonic() > deadline:
            break
        time.sleep(0.5)
    raise EnvironmentProblem("no broker answered: " + ", ".join(problems), where=bootstrap,
                             hint="is the lab up? kops lab up, or kops lab broker resume/start")


def create_topics(bootstrap: str, spec: Any) -> None:
    """Create topics through the first broker that answers. A create whose answer timed out may still have been
    carried out (Kafka 3.9 through ZooKeeper, under load): a retry that finds the topics there counts as done.
    A topic that already existed before the first attempt is still refused."""
    attempts = 0

    def ask(client: KafkaAdminClient) -> None:
        nonlocal attempts
        attempts += 1
        try:
            client.create_topics(spec)
        except TopicAlreadyExistsError as exc:
            if attempts == 1:
                raise UsageError(f"topic already exists: {exc}", where=bootstrap,
                                 hint="delete it first, or use another name") from exc

    first_answer(bootstrap, ask)


def layout(bootstrap: str) -> dict[str, dict[int, dict[str, object]]]:
    """Every user topic's partitions as Kafka reports them: replicas (in order), leader, ISR."""
    def ask(client: KafkaAdminClient) -> list[dict[str, Any]]:
        names = [t for t in client.list_topics() if not t.startswith("__")]
        return client.describe_topics(names) if names else []

    described = first_answer(bootstrap, ask)
    return {t["name"]: {p["partition_index"]: {"replicas": tuple(p["replica_nodes"]), "leader": p["leader_id"],
                                                "isr": tuple(sorted(p["isr_nodes"]))} for p in t["partitions"]}
            for t in described}


def producer(bootstrap: str, **settings: object) -> KafkaProducer:
    """acks=all and retries; `settings` override any of them (a test's client id or delivery timeout)."""
    return KafkaProducer(**{"bootstrap_servers": bootstrap.split(","), "client_id": CLIENT_ID, "acks": "all",
                            "linger_ms": 20, "batch_size": 256 * 1024, "max_request_size": 2 * 1024 * 1024,
                            "retries": 20, **settings})


# Bytes a fill keeps unacknowledged. kafka-python's producer has no buffer limit: sent all at once, a fill's last
# batches waited for every earlier one and expired at the delivery timeout (120 s) once the fill took longer
# (bench/rolling.py at its defaults: 560 MiB, checksummed at 2 MB/s in pure Python before the crc32c package).
# Waiting at this bound keeps each batch's wait near WINDOW / throughput, whatever the fill's size.
WINDOW = 32 * 1024 * 1024


def produce(bootstrap: str, topic: str, count: int, partition: int | None = None, record_size: int = 16384) -> int:
    """Append `count` bytes of record values (random, so compression cannot shrink them); records written.

    Spread over every partition of the topic, or into `partition`; acknowledged by all in-sync replicas.
    """
    if count <= 0:
        raise UsageError("--bytes must be positive")
    if not _known(bootstrap, topic):
        raise UsageError(f"no topic {topic!r} in the lab", hint="create it first (kops apply, or Kafka's tools)")
    out = producer(bootstrap)
    try:
        partitions = sorted(out.partitions_for(topic) or [])
        if partition is not None and partition not in partitions:
            raise UsageError(f"topic {topic!r} has no partition {partition}", hint=f"partitions are {partitions}")
        targets = [partition] if partition is not None else partitions
        records = max(1, count // record_size)
        return send_bounded(out, {(topic, p): records // len(targets) + (i < records % len(targets))
                                  for i, p in enumerate(targets)}, record_size)
    except KafkaError as exc:
        raise EnvironmentProblem(f"producing to {topic} failed: {exc}", where=bootstrap) from None
    finally:
        out.close(timeout=10)


def send_bounded(out: KafkaProducer, counts: dict[tuple[str, int], int], record_size: int,
                 window: int = WINDOW) -> int:
    """`counts` records of `record_size` random bytes to each (topic, partition), dealt round robin (a request
    carries many partitions' batches), never more than `window` bytes unacknowledged. Records written."""
    pending: deque[Any] = deque()
    rounds = max(counts.values(), default=0)
    for i in range(rounds):
        for (topic, p), n in counts.items():
            if i < n:
                pending.append(out.send(topic, os.urandom(record_size), partition=p))
            while len(pending) * record_size > window:
                pending.popleft().get(timeout=300)
    out.flush(timeout=300)
    while pending:
        pending.popleft().get(timeout=60)
    return sum(counts.values())


def _known(bootstrap: str, topic: str, patience: float = 5.0) -> bool:
    """Whether the brokers know `topic`, waiting `patience` seconds for one just created: each broker learns
    new topics from the controller on its own, so the broker asked may not know it yet (CI caught a
    `kops lab produce` refused right after another broker had reported the topic)."""
    deadline = time.monotonic() + patience
    while topic not in first_answer(bootstrap, lambda client: client.list_topics()):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.25)
    return True


def fill(bootstrap: str, sizes: dict[str, dict[int, int]], record_size: int = 16384, window: int = WINDOW,
         **settings: object) -> int:
    """Real records to each partition (topic -> partition -> bytes, rounded to whole records, at least one),
    through one producer, acknowledged by all in-sync replicas: a rehearsal's clone. Records written."""
    out = producer(bootstrap, **settings)
    try:
        counts = {(topic, p): max(1, round(count / record_size))
                  for topic, shares in sorted(sizes.items()) for p, count in sorted(shares.items()) if count > 0}
        return send_bounded(out, counts, record_size, window)
    except KafkaError as exc:
        raise EnvironmentProblem(f"producing the clone's data failed: {exc}", where=bootstrap) from None
    finally:
        out.close(timeout=10)


def steady(bootstrap: str, topic: str, rate: float, record_size: int = 8192) -> None:
    """Produce `rate` bytes per second to `topic` until killed (the lab's steady ingest process)."""
    out = producer(bootstrap)
    interval = record_size / rate
    next_at = time.monotonic()
    while True:
        out.send(topic, os.urandom(record_size))
        next_at += interval
        delay = next_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)


def cluster_status(bootstrap: str, kraft: bool) -> dict[str, Any]:
    """What `kops lab status` shows of a real cluster, as Kafka reports it; `bootstrap`: servers not paused.

    Each question goes its own way (kafka-python routes some to the controller it believes in, which a paused
    node can be), so one silent node costs one unknown field, not the whole status.
    """
    cluster = first_answer(bootstrap, lambda client: client.describe_cluster(), timeout_ms=3000)

    def topics(client: KafkaAdminClient) -> list[dict[str, Any]]:
        names = [t for t in client.list_topics() if not t.startswith("__")]
        return client.describe_topics(names) if names else []

    described = first_answer(bootstrap, topics, timeout_ms=3000)
    moving = _maybe(bootstrap, lambda client: client.list_partition_reassignments())
    controller = cluster.get("controller_id")
    if kraft:  # KRaft hides its controllers from DescribeCluster (it names a random broker): ask the quorum
        quorum = _maybe(bootstrap, lambda client: client.describe_metadata_quorum())
        controller = None if quorum is None else quorum["topics"][0]["partitions"][0]["leader_id"]
    partitions = [(t["name"], p) for t in described for p in t["partitions"]]
    return {
        "cluster_id": cluster.get("cluster_id"),
        "controller": controller,
        "registered": sorted(int(b["broker_id"]) for b in cluster["brokers"]),
        "topics": len(described),
        "partitions": len(partitions),
        "under_replicated": sorted(f"{n}-{p['partition_index']}" for n, p in partitions
                                   if len(p["isr_nodes"]) < len(p["replica_nodes"])),
        "offline": sorted(f"{n}-{p['partition_index']}" for n, p in partitions if p["leader_id"] < 0),
        "reassigning": None if moving is None else sorted(f"{tp[0]}-{tp[1]}" for tp in moving),
    }


def _maybe(bootstrap: str, ask: Callable[[KafkaAdminClient], T]) -> T | None:
    """One answer if some broker gives it soon; None (shown as unknown) otherwise."""
    try:
        return first_answer(bootstrap, ask, timeout_ms=3000, patience=0)
    except EnvironmentProblem:
        return None
