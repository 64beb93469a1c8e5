"""One lab-test fixture over every engine: the kops engine (a fresh lab per test) and real Kafka 3.9 in ZooKeeper
mode (one cluster per test module, cleaned between tests: topics deleted, /kops removed, throttles cleared,
every broker running).

A test asks for `engine_lab` and gets an `EngineLab`: the ZooKeeper connect string kops is given, the lab
(to kill, stop and start brokers), `produce` (simulated bytes on the kops engine, real acks=all records on real
Kafka) and `judge_layout` (what Kafka itself reports, through its Admin API, on real Kafka).

Real engines need Kafka's jars (`make setup` fetches them). Without them the real-engine tests are skipped
on a developer's machine and fail under CI, where they must run.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kops.errors import KopsError
from kops.lab import kafka_dist
from kops.lab.kops_engine import Lab
from kops.model.throttle_keys import ALL_KEYS
from kops.zk_layout import paths, tool_writes
from kops.zk_layout.client import ZkClient, ZkSettings
from kops.zk_layout.reader import read_snapshot
from tests.labtools import produced, running_lab, state, wait_until

ENGINES = ("kops", "kafka-3.9")
REAL_BROKERS = 4


def require_real(engine: str) -> kafka_dist.Distribution:
    found = kafka_dist.installed(engine)
    if found is None:
        message = f"{engine} is not installed (make setup fetches it with Maven)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


@dataclass
class EngineLab:
    engine: str
    lab: Any  # kops.lab.kops_engine.Lab or kops.lab.kafka_lab.KafkaLab
    zk_connect: str
    bootstrap: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def real(self) -> bool:
        return self.engine != "kops"

    def produce(self, zk: ZkClient, topic: str, partition: int, count: int) -> bool:
        """Append `count` bytes to one partition; False when its leader is not ready yet (poll again)."""
        if not self.real:
            return bool(produced(zk, topic, count, partition))
        from kops.lab.kafka_client import produce

        assert self.bootstrap is not None
        try:
            return produce(self.bootstrap, topic, count, partition) > 0
        except KopsError:  # the brokers' metadata does not know the new topic yet: retry
            return False

    def create_and_fill(self, zk: ZkClient, layouts: dict[str, dict[int, tuple[int, ...]]], megabytes: float) -> None:
        for name, assignment in layouts.items():
            tool_writes.create_topic(zk, name, assignment)
        if self.real:
            assert self.bootstrap is not None
            fill_real(self.bootstrap, layouts, megabytes)
            return
        for name, assignment in layouts.items():
            for p in assignment:
                wait_until(lambda name=name, p=p: state(zk, name, p), what=f"{name}-{p} created")
                wait_until(lambda name=name, p=p: self.produce(zk, name, p, int(megabytes * 1024 * 1024)),
                           timeout=60, what=f"{name}-{p} produced")

    def judge_layout(self) -> dict[str, dict[int, tuple[int, ...]]] | None:
        """Replicas per partition as Kafka itself reports them (Admin API); None on the kops engine."""
        if not self.real:
            return None
        from kops.lab.kafka_client import layout

        assert self.bootstrap is not None
        return {t: {p: row["replicas"] for p, row in parts.items()}  # type: ignore[misc]  # plain JSON rows
                for t, parts in layout(self.bootstrap).items()}


def fill_real(bootstrap: str, layouts: dict[str, dict[int, tuple[int, ...]]], megabytes: float) -> None:
    """`megabytes` of real records into every partition, through one producer once every leader is elected (a
    producer per partition cost half a second each)."""
    from kops.lab.kafka_client import fill, layout

    def elected() -> bool:
        found = layout(bootstrap)
        return all(t in found and len(found[t]) == len(a) and all(p["leader"] != -1 for p in found[t].values())
                   for t, a in layouts.items())

    wait_until(elected, timeout=60, what="every partition's leader elected")
    fill(bootstrap, {t: dict.fromkeys(a, int(megabytes * 1024 * 1024)) for t, a in layouts.items()})


def every_broker_running(lab: Any) -> None:
    """Paused brokers resumed, stopped or killed ones started."""
    state_ = lab.state()
    for broker in sorted(state_.racks):
        if lab.paused(broker, state_):
            lab.resume_broker(broker)
        if not lab.running(broker, state_):
            lab.start_broker(broker)


def reset_real_cluster(lab: Any, connect: str) -> None:
    """Back to an empty cluster between tests: brokers up, nothing moving, no topics (`__kops` included), no
    /kops, no throttles."""
    every_broker_running(lab)
    with ZkClient(ZkSettings(connect)) as zk:
        wait_until(lambda: not read_snapshot(zk).in_flight(), timeout=120, what="no reassignment in flight")
        if zk.exists(paths.KOPS_ROOT) is not None:
            zk.delete(paths.KOPS_ROOT, recursive=True)
        def ours() -> list[str]:  # kops's `__kops` too: the Admin-API tests on this shared cluster leave it
            return [t for t in read_snapshot(zk).topics if not t.startswith("__") or t == "__kops"]

        for name in ours():
            tool_writes.delete_topic(zk, name)
        wait_until(lambda: not ours(), timeout=120, what="topics deleted")
        for broker, config in read_snapshot(zk).broker_configs.items():
            keys = [k for k in config if k in ALL_KEYS]
            if keys:
                tool_writes.alter_config(zk, "brokers", str(broker), dict.fromkeys(keys))


@contextmanager
def kafka39_cluster(directory: Path, zookeeper_server: str) -> Iterator[EngineLab]:
    require_real("kafka-3.9")
    from kops.lab.kafka_lab import KafkaLab

    lab = KafkaLab(directory, detached=False)
    connect = f"{zookeeper_server}/kafka39-{uuid.uuid4().hex[:8]}"
    state_ = lab.up("kafka-3.9", brokers=REAL_BROKERS, zookeeper=connect)
    try:
        yield EngineLab("kafka-3.9", lab, connect, state_.bootstrap)
    finally:
        lab.down()
        assert not lab.pids_alive(), "a Kafka process survived lab.down()"


@contextmanager
def engine_cluster(engine: str, tmp_path: Path, zk_connect: str, shared: Callable[[], EngineLab],
                   brokers: int = REAL_BROKERS, **kops_options: Any) -> Iterator[EngineLab]:
    """A kops-engine lab of its own, or the module's real cluster, reset."""
    if engine == "kops":
        with running_lab(tmp_path / "lab", zk_connect, brokers=brokers, **kops_options) as lab:
            yield EngineLab("kops", lab, zk_connect)
        return
    assert brokers == REAL_BROKERS, f"real-engine modules share one cluster of {REAL_BROKERS} brokers"
    cluster = shared()
    reset_real_cluster(cluster.lab, cluster.zk_connect)
    yield cluster


def reset_admin_cluster(lab: Any, bootstrap: str) -> None:
    """Back to an empty cluster through the Admin API (KRaft has no ZooKeeper to clean): brokers up, nothing
    moving, no topics (kops's `__kops` included), no throttles."""
    from kafka.admin import ConfigResource

    from kops.lab.kafka_client import admin_client, first_answer

    every_broker_running(lab)
    wait_until(lambda: not first_answer(bootstrap, lambda c: c.list_partition_reassignments()), timeout=120,
               what="no reassignment in flight")

    def user_topics() -> list[str]:
        return [t for t in first_answer(bootstrap, lambda c: c.list_topics())
                if not t.startswith("__") or t == "__kops"]

    if user_topics():
        first_answer(bootstrap, lambda c: c.delete_topics(user_topics()))
    wait_until(lambda: not user_topics(), timeout=120, what="topics deleted")
    with admin_client(bootstrap) as client:
        brokers = [str(b["broker_id"]) for b in client.describe_cluster()["brokers"]]
        for broker in brokers:
            client.alter_configs([ConfigResource("BROKER", broker, configs={k: ("DELETE", None) for k in ALL_KEYS
                                                                            if k.endswith("rate")})],
                                 incremental=True, raise_on_unknown=False)


@contextmanager
def kafka4_cluster(directory: Path) -> Iterator[EngineLab]:
    """Real Kafka 4 in KRaft mode: REAL_BROKERS brokers, the first also the (single) quorum controller."""
    require_real("kafka-4")
    from kops.lab.kafka_lab import KafkaLab

    lab = KafkaLab(directory, detached=False)
    state_ = lab.up("kafka-4", brokers=REAL_BROKERS)
    try:
        yield EngineLab("kafka-4", lab, "", state_.bootstrap)
    finally:
        lab.down()
        assert not lab.pids_alive(), "a Kafka process survived lab.down()"


__all__ = ["ENGINES", "EngineLab", "Lab", "engine_cluster", "fill_real", "kafka39_cluster", "kafka4_cluster",
           "require_real",
           "reset_admin_cluster"]
