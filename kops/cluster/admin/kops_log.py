"""The `__kops` topic: where the lock and the execution records live on a cluster without ZooKeeper.

One compacted, single-partition topic, created by the first write with as many replicas as the cluster has brokers
(up to 3), `min.insync.replicas` 2 where there are 2 or more, `acks=all` writes, and broker-assigned
timestamps (LogAppendTime), so every contender reads the same time for every record whatever its own clock.
Records are keyed (`execution/<id>`, `cancel/<id>`, `lock/<claim>`) with JSON values; a null value deletes a
key. Readers keep a consumer assigned to the partition and read only what is new since their last read. Only a
write creates the topic: a read of a cluster without it finds nothing (so `kops status` needs no CREATE).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, TypeVar

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError, KafkaTimeoutError, TopicAlreadyExistsError

from kops.cluster.admin.connection import AdminSettings, accepts, servers
from kops.errors import ConnectionFailed
from kops.model.partitions import KOPS_TOPIC

TOPIC = KOPS_TOPIC
PARTITION = TopicPartition(TOPIC, 0)
MAX_REPLICAS = 3  # as Kafka's own __consumer_offsets: one more would leave no broker to decommission on 4
SEND_TIMEOUT = 30.0
ABSENT, ABSENT_CLOCK = "absent/", "absent-clock"  # docs/design/healing.md §1
READ_PATIENCE = 30.0  # seconds a read retries through a leader election of __kops
C = TypeVar("C")


@dataclass(frozen=True)
class Entry:
    offset: int
    timestamp_ms: int
    key: str
    value: bytes | None


def topic_settings(brokers: int) -> tuple[int, dict[str, str]]:
    """Replication factor and configs for `__kops` on a cluster of this many brokers."""
    replicas = max(1, min(brokers, MAX_REPLICAS))
    return replicas, {"cleanup.policy": "compact", "min.insync.replicas": str(min(2, replicas)),
                      "message.timestamp.type": "LogAppendTime", "unclean.leader.election.enable": "false"}


class KopsLog:
    """Appends keyed records and folds everything read into `latest` (and hands each record to `watchers`)."""

    def __init__(self, settings: AdminSettings, admin: Callable[[], KafkaAdminClient]) -> None:
        self.settings = settings
        self._admin = admin
        self._producer: KafkaProducer | None = None
        self._consumer: KafkaConsumer | None = None
        self.latest: dict[str, Entry] = {}
        self._next = 0  # the offset to read next
        self._exists = False  # `__kops` seen or created: no need to list the topics again
        self._answered: str | None = None  # the bootstrap server the last producer or consumer bootstrapped through
        self.watchers: list[Callable[[Entry], None]] = []

    def _client_arguments(self, allowed: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in self.settings.client_arguments().items() if k in allowed}

    def _bootstrapped(self, make: Callable[[dict[str, Any]], C], allowed: dict[str, Any]) -> C:
        """A producer or consumer bootstrapped through each bootstrap server alone in turn: kafka-python gives up
        when the first server it picks is silent (a paused broker, still listening: its handshake outlasts the
        bootstrap timeout) instead of trying the next, as AdminCluster._ask does for the admin client. The server
        that answered last goes first, and one that refuses the connection (a stopped broker) is passed over at
        once: alone, kafka-python would retry it for the whole bootstrap timeout (--connect-timeout), once for
        the consumer and once more for the producer."""
        arguments = self._client_arguments(allowed)
        listed = servers(self.settings.bootstrap)
        ordered = sorted(listed, key=lambda server: server != self._answered)
        for server in ordered:
            if len(listed) > 1 and not accepts(server, self.settings.connect_timeout_ms):
                continue
            with contextlib.suppress(KafkaTimeoutError):
                made = make({**arguments, "bootstrap_servers": [server]})
                self._answered = server
                return made
            if server == self._answered:  # it answered before and not now: no longer first
                self._answered = None
        raise ConnectionFailed(f"no broker answered to reach {TOPIC}", where=self.settings.bootstrap,
                               hint="check the brokers (kops status) and --command-config")

    def ensure_topic(self) -> None:
        client = self._admin()
        try:
            brokers = len([b for b in client.describe_cluster()["brokers"] if not b.get("is_fenced")])  # KRaft
            replicas, configs = topic_settings(brokers)
            client.create_topics({TOPIC: {"num_partitions": 1, "replication_factor": replicas, "configs": configs}})
        except TopicAlreadyExistsError:
            pass
        except KafkaError as exc:
            raise ConnectionFailed(f"cannot create the {TOPIC} topic (kops's lock and records): {exc}",
                                   where=self.settings.bootstrap,
                                   hint="the principal needs CREATE on the cluster, or create it by hand "
                                        "(1 partition, cleanup.policy=compact, message.timestamp.type=LogAppendTime)"
                                   ) from None
        self._exists = True

    def append(self, key: str, value: bytes | None) -> Entry:
        if self._producer is None:
            self.ensure_topic()
            self._producer = self._bootstrapped(lambda arguments: KafkaProducer(
                acks="all", retries=5, linger_ms=0, max_block_ms=int(SEND_TIMEOUT * 1000), **arguments),
                KafkaProducer.DEFAULT_CONFIG)
        try:
            meta = self._producer.send(TOPIC, key=key.encode(), value=value, partition=0).get(timeout=SEND_TIMEOUT)
        except KafkaError as exc:
            raise ConnectionFailed(f"cannot write to {TOPIC}: {exc}", where=self.settings.bootstrap,
                                   hint="check the brokers holding __kops (kops status)") from None
        return Entry(meta.offset, meta.timestamp, key, value)

    def refresh(self) -> None:
        """Read everything appended since the last read, up to the end of the log as it is now. A failure (the
        partition's leader just died) is retried with a fresh consumer from where the last read stopped, for as
        long as Kafka takes to elect another leader."""
        deadline = time.monotonic() + READ_PATIENCE
        while True:
            try:
                return self._read_to_end()
            except KafkaError as exc:
                self._close_consumer()
                if time.monotonic() > deadline:
                    raise ConnectionFailed(f"cannot read {TOPIC}: {exc}", where=self.settings.bootstrap,
                                           hint="check the brokers holding __kops (kops status)") from None
                time.sleep(0.5)

    def _read_to_end(self) -> None:
        consumer = self._open_consumer()
        if consumer is None:
            return  # no `__kops` yet: nothing was ever written, so no records and no lock holder
        end = consumer.end_offsets([PARTITION])[PARTITION]
        while self._next < end:
            for records in consumer.poll(timeout_ms=1000).values():
                for r in records:
                    if r.offset >= self._next:
                        self._fold(Entry(r.offset, r.timestamp, (r.key or b"").decode(), r.value))
                        self._next = r.offset + 1

    def _open_consumer(self) -> KafkaConsumer | None:
        """The consumer assigned to `__kops`, None while the topic does not exist: reading never creates it."""
        if self._consumer is None:
            if not self._exists and TOPIC not in self._admin().list_topics():
                return None
            self._exists = True
            self._consumer = self._bootstrapped(lambda arguments: KafkaConsumer(
                group_id=None, enable_auto_commit=False, **arguments), KafkaConsumer.DEFAULT_CONFIG)
            self._consumer.assign([PARTITION])
            self._consumer.seek(PARTITION, self._next)
        return self._consumer

    def _close_consumer(self) -> None:
        if self._consumer is not None:
            with contextlib.suppress(KafkaError):
                self._consumer.close()
            self._consumer = None

    def _fold(self, entry: Entry) -> None:
        if entry.value is None:
            self.latest.pop(entry.key, None)
        else:
            self.latest[entry.key] = entry
        for watch in self.watchers:
            watch(entry)

    def keys(self, prefix: str) -> list[str]:
        return sorted(k[len(prefix):] for k in self.latest if k.startswith(prefix))

    def close(self) -> None:
        try:
            if self._producer is not None:
                self._producer.close(timeout=2)
        except KafkaError:
            pass  # closing: nothing left to do with an error
        self._producer = None
        self._close_consumer()


class LogRecords:
    """The port's record store over `__kops`: `execution/<id>` and `cancel/<id>` keys."""

    max_bytes = 900_000  # under Kafka's default max.message.bytes (1 MiB)

    def __init__(self, log: KopsLog) -> None:
        self.log = log

    def create(self, execution_id: str, data: bytes) -> None:
        self.log.append(f"execution/{execution_id}", data)

    def save(self, execution_id: str, data: bytes) -> None:
        self.log.append(f"execution/{execution_id}", data)

    def load(self, execution_id: str) -> bytes | None:
        self.log.refresh()
        found = self.log.latest.get(f"execution/{execution_id}")
        return None if found is None else found.value

    def ids(self) -> list[str]:
        self.log.refresh()
        return self.log.keys("execution/")

    def set_cancel(self, execution_id: str, data: bytes) -> None:
        self.log.append(f"cancel/{execution_id}", data)

    def get_cancel(self, execution_id: str) -> bytes | None:
        self.log.refresh()
        found = self.log.latest.get(f"cancel/{execution_id}")
        return None if found is None else found.value

    def clear_cancel(self, execution_id: str) -> None:
        if self.get_cancel(execution_id) is not None:
            self.log.append(f"cancel/{execution_id}", None)

    def note_absent(self, absent: Collection[int]) -> tuple[dict[int, int], int]:
        """`absent/<id>` per absent broker, appended once: its LogAppendTime is the first sighting (compaction
        keeps the one record); `absent-clock` appended for the broker's time now."""
        self.log.refresh()
        noted = {int(k) for k in self.log.keys(ABSENT) if k.isdigit()}
        if not absent and not noted:
            return {}, 0  # a healthy cluster: nothing to write
        for broker in sorted(noted - set(absent)):
            self.log.append(f"{ABSENT}{broker}", None)
        for broker in sorted(set(absent) - noted):
            self.log.latest[f"{ABSENT}{broker}"] = self.log.append(f"{ABSENT}{broker}", b"{}")
        now = self.log.append(ABSENT_CLOCK, b"{}").timestamp_ms
        return {b: self.log.latest[f"{ABSENT}{b}"].timestamp_ms for b in sorted(absent)}, now
