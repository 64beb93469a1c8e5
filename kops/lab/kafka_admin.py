"""The lab's side of the Kafka protocol (kafka-python): is the cluster up, and real records into it.

The lab uses this to wait for brokers and to produce; tests use it to judge what kops did through Kafka
itself. kafka-python's connection warnings (a broker still starting, one just killed) are expected here and
kept off the terminal.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from kafka import KafkaAdminClient, KafkaProducer
from kafka.errors import KafkaError

from kops.errors import EnvironmentProblem, UsageError

logging.getLogger("kafka").addHandler(logging.NullHandler())
logging.getLogger("kafka").propagate = False

CLIENT_ID = "kops-lab"


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
        with admin_client(bootstrap, timeout_ms=5000) as client:
            found = client.describe_cluster()
    except (KafkaError, OSError, ValueError):
        return None
    if found.get("controller_id", -1) in (None, -1):
        return None
    return {int(b["broker_id"]) for b in found["brokers"] if not b.get("is_fenced")}


def layout(bootstrap: str) -> dict[str, dict[int, dict[str, object]]]:
    """Every user topic's partitions as Kafka reports them: replicas (in order), leader, ISR."""
    with admin_client(bootstrap) as client:
        names = [t for t in client.list_topics() if not t.startswith("__")]
        described = client.describe_topics(names) if names else []
    return {t["name"]: {p["partition_index"]: {"replicas": tuple(p["replica_nodes"]), "leader": p["leader_id"],
                                                "isr": tuple(sorted(p["isr_nodes"]))} for p in t["partitions"]}
            for t in described}


def producer(bootstrap: str, **settings: object) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=bootstrap.split(","), client_id=CLIENT_ID, acks="all",
                         linger_ms=20, batch_size=256 * 1024, max_request_size=2 * 1024 * 1024, retries=20,
                         **settings)


def produce(bootstrap: str, topic: str, count: int, partition: int | None = None, record_size: int = 16384) -> int:
    """Append `count` bytes of record values (random, so compression cannot shrink them); records written.

    Spread over every partition of the topic, or into `partition`; acknowledged by all in-sync replicas.
    """
    if count <= 0:
        raise UsageError("--bytes must be positive")
    with admin_client(bootstrap) as client:
        if topic not in client.list_topics():
            raise UsageError(f"no topic {topic!r} in the lab", hint="create it first (kops apply, or Kafka's tools)")
    out = producer(bootstrap)
    try:
        partitions = sorted(out.partitions_for(topic) or [])
        if partition is not None and partition not in partitions:
            raise UsageError(f"topic {topic!r} has no partition {partition}", hint=f"partitions are {partitions}")
        targets = [partition] if partition is not None else partitions
        records = max(1, count // record_size)
        futures = [out.send(topic, os.urandom(record_size), partition=targets[i % len(targets)])
                   for i in range(records)]
        out.flush(timeout=120)
        for future in futures:
            future.get(timeout=60)
        return records
    except KafkaError as exc:
        raise EnvironmentProblem(f"producing to {topic} failed: {exc}", where=bootstrap) from None
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


def cluster_status(bootstrap: str, kraft: bool) -> dict[str, object]:
    """What `kops lab status` shows of a real cluster, as Kafka reports it.

    A paused broker accepts connections and answers nothing: each server is tried alone, with a short timeout.
    """
    problems = []
    for server in bootstrap.split(","):
        try:
            return _status_through(server, kraft)
        except (KafkaError, OSError) as exc:
            problems.append(f"{server}: {type(exc).__name__}")
    raise EnvironmentProblem("no broker answered: " + ", ".join(problems), where=bootstrap,
                             hint="is the lab up? kops lab up, or kops lab broker resume/start")


def _status_through(server: str, kraft: bool) -> dict[str, object]:
    with admin_client(server, timeout_ms=3000) as client:
        cluster = client.describe_cluster()
        names = [t for t in client.list_topics() if not t.startswith("__")]
        described = client.describe_topics(names) if names else []
        moving = client.list_partition_reassignments()
        controller = cluster.get("controller_id")
        if kraft:  # KRaft hides its controllers from DescribeCluster (it names a random broker): ask the quorum
            quorum = client.describe_metadata_quorum()["topics"][0]["partitions"][0]
            controller = quorum["leader_id"]
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
        "reassigning": sorted(f"{tp[0]}-{tp[1]}" for tp in moving),
    }
