"""Setting a batch's replication throttles and restoring what was there, for exactly the keys kops changed.

Set: the lists and rates are computed as Kafka's 2.6+ tool does (`kops.planner.throttles`), merged with the
values in force at that moment (an operator's `*` stays, other entries stay, a lower rate stays). The values
found are recorded before anything is written, the first time kops touches a key in an execution.
Restore, at each batch's end: not where something else (another tool's reassignment) still moves through the
topic or broker — those wait for a later checkpoint, and the end of the execution restores everything. A key
goes back to what was found, unless someone changed it after kops wrote it: then, for a list,
only kops's own entries are removed; for a rate, the other writer's value stays. So an operator's throttle,
and a throttle another tool set for its own moves, survive kops.
"""

from __future__ import annotations

from kops.cluster.port import Cluster
from kops.errors import ConnectionFailed
from kops.executor.record import ExecutionRecord
from kops.model.partitions import TopicPartition
from kops.model.plan import Move
from kops.model.snapshot import Snapshot
from kops.model.throttle_keys import TOPIC_KEYS
from kops.model.throttle_keys import list_entries as _entries
from kops.planner.throttles import batch_throttle


def entity_key(entity_type: str, name: str) -> str:
    return f"{entity_type}/{name}"


def plan_batch_throttles(record: ExecutionRecord, moves: list[Move], snapshot: Snapshot) -> dict[str, dict[str, str]]:
    """The values to write for this batch; records the values found (call before writing, then save)."""
    throttle = batch_throttle(moves, snapshot, record.rate)
    wanted: dict[str, dict[str, str]] = {}
    for topic, values in throttle.topics.items():
        found = snapshot.topics[topic].config if topic in snapshot.topics else {}
        _remember(record, entity_key("topics", topic), values, found)
        wanted[entity_key("topics", topic)] = values
    for broker, values in throttle.brokers.items():
        found = snapshot.broker_configs.get(str(broker), {})
        _remember(record, entity_key("brokers", str(broker)), values, found)
        wanted[entity_key("brokers", str(broker))] = values
    return wanted


def _remember(record: ExecutionRecord, key: str, values: dict[str, str], found: dict[str, str]) -> None:
    before = record.throttles_before.setdefault(key, {})
    for name in values:
        before.setdefault(name, found.get(name))


def write(cluster: Cluster, record: ExecutionRecord, wanted: dict[str, dict[str, str]]) -> None:
    for key, values in sorted(wanted.items()):
        entity_type, _, name = key.partition("/")
        cluster.alter_config(entity_type, name, values)
        record.throttles_written.setdefault(key, {}).update(values)


def busy_entities(snapshot: Snapshot, ours: set[TopicPartition]) -> set[str]:
    """Throttle entities something else is still moving through: its topics, and the brokers it uses."""
    busy: set[str] = set()
    for m in snapshot.in_flight():
        if TopicPartition(m.topic, m.partition) in ours:
            continue
        busy.add(entity_key("topics", m.topic))
        busy.update(entity_key("brokers", str(b)) for b in set(m.replicas) | set(m.target or ()))
    return busy


def restore(cluster: Cluster, record: ExecutionRecord, busy: set[str] | None = None) -> list[str]:
    """Put back the throttle keys kops changed, except on `busy` entities (kept for a later checkpoint; the
    end of the execution restores everything). Returns the entities restored, which the record forgets."""
    done = []
    for key, before in sorted(record.throttles_before.items()):
        if busy and key in busy:
            continue
        try:
            _restore_one(cluster, key, before, record.throttles_written.get(key, {}))
        except ConnectionFailed:
            continue  # its broker does not answer now (killed, say): kept, for a later checkpoint or --resume
        done.append(key)
    for key in done:
        record.throttles_before.pop(key, None)
        record.throttles_written.pop(key, None)
    return done


def _restore_one(cluster: Cluster, key: str, before: dict[str, str | None], written: dict[str, str]) -> None:
    """One entity's keys back to what was found, unless someone changed them since kops wrote them."""
    entity_type, _, name = key.partition("/")
    current = cluster.read_config(entity_type, name)
    changes: dict[str, str | None] = {}
    for config_key, old in before.items():
        now, ours = current.get(config_key), written.get(config_key)
        if ours is None or now == ours:
            changes[config_key] = old
        elif config_key in TOPIC_KEYS and now is not None and now.strip() != "*":
            kept = _entries(now) - (_entries(ours) - _entries(old))
            changes[config_key] = ",".join(sorted(kept)) if kept else old
        else:
            changes[config_key] = now  # someone else's value since: theirs to remove
    cluster.alter_config(entity_type, name, changes)
