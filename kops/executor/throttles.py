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

from collections.abc import Mapping
from contextlib import suppress

from kops.cluster.port import Cluster, Entity
from kops.errors import ConnectionFailed, KopsError
from kops.executor.record import ExecutionRecord
from kops.model.partitions import TopicPartition
from kops.model.plan import ALTER_LOG_DIRS_RATE, Move
from kops.model.snapshot import Snapshot
from kops.model.throttle_keys import TOPIC_KEYS
from kops.model.throttle_keys import list_entries as _entries
from kops.planner.throttles import ConfigOf, batch_throttle, snapshot_configs


def entity_key(entity_type: str, name: str) -> str:
    return f"{entity_type}/{name}"


def plan_batch_throttles(record: ExecutionRecord, moves: list[Move], snapshot: Snapshot,
                         config_of: ConfigOf | None = None,
                         caps: Mapping[int, int] | None = None) -> dict[str, dict[str, str]]:
    """The values to write for this batch; records the values found (call before writing, then save). `caps`: the
    plan's, per broker: its follower rate stays under them whatever the execution's rate."""
    config_of = config_of or snapshot_configs(snapshot)
    throttle = batch_throttle(moves, snapshot, record.rate, config_of, caps)
    wanted: dict[str, dict[str, str]] = {}
    for topic, values in throttle.topics.items():
        _remember(record, entity_key("topics", topic), values, config_of("topics", topic))
        wanted[entity_key("topics", topic)] = values
    for broker, values in throttle.brokers.items():
        if broker not in snapshot.live_broker_ids:
            continue  # an absent replica a healing drops (docs/design/healing.md) sends nothing; none would answer
        _remember(record, entity_key("brokers", str(broker)), values, config_of("brokers", str(broker)))
        wanted[entity_key("brokers", str(broker))] = values
    return wanted


def alter_log_dirs_throttles(record: ExecutionRecord, brokers: set[int],
                             snapshot: Snapshot) -> dict[str, dict[str, str]]:
    """Disk moves' throttle, `replica.alter.log.dirs.io.max.bytes.per.second` at the execution's rate on each
    broker in `brokers` (a lower value found stays); the values found are recorded, as for the replication
    throttles, and restored with them. Nothing when the execution is unthrottled."""
    if record.rate is None:
        return {}
    wanted: dict[str, dict[str, str]] = {}
    for broker in sorted(brokers):
        key = entity_key("brokers", str(broker))
        found = snapshot.broker_configs.get(str(broker), {})
        rate = record.rate
        with suppress(KeyError, ValueError):
            rate = min(rate, int(found[ALTER_LOG_DIRS_RATE]))
        values = {ALTER_LOG_DIRS_RATE: str(rate)}
        _remember(record, key, values, found)
        wanted[key] = values
    return wanted


def in_flight_throttles(record: ExecutionRecord, moves: list[Move], snapshot: Snapshot) -> dict[str, dict[str, str]]:
    """Rolling execution: the values covering exactly `moves` (those in flight), merged with what others set
    (kops's own entries for moves already finished are left out); records the values found, as above."""
    def config_of(entity_type: str, name: str) -> Mapping[str, str]:
        now = dict(snapshot_configs(snapshot)(entity_type, name))
        key = entity_key(entity_type, name)
        for config_key, before in record.throttles_before.get(key, {}).items():
            value = without_ours(config_key, now.get(config_key), record.throttles_written.get(key, {}).get(config_key),
                                 before)
            if value is None:
                now.pop(config_key, None)
            else:
                now[config_key] = value
        return now
    caps: dict[int, int] = {}
    for batch in record.in_flight:  # the tightest of the plan's caps of every batch in flight
        for broker, cap in batch.caps.items():
            caps[broker] = min(cap, caps.get(broker, cap))
    return plan_batch_throttles(record, moves, snapshot, config_of, caps)


def write_in_flight(cluster: Cluster, record: ExecutionRecord, wanted: dict[str, dict[str, str]],
                    busy: set[str]) -> bool:
    """Rolling execution: write what changed of `wanted`, restore every other entity kops throttled (except
    `busy` ones, which something else still moves through). Whether a broker's rate was written: only then
    must the brokers be given a moment before the moves start (see `rates_written`)."""
    changed = {key: values for key, values in wanted.items() if record.throttles_written.get(key) != values}
    write(cluster, record, changed)
    restore(cluster, record, busy | set(wanted))
    return rates_written(changed)


def rates_written(changed: Mapping[str, Mapping[str, str]]) -> bool:
    """Whether a write set a broker's throttle rate. A change of a topic's replica lists alone needs no wait
    before the reassignment, as in Kafka's own tool: KRaft brokers apply the config record before the
    partition change that follows it in the metadata log, and a ZooKeeper-mode broker gets the config
    notification, written first, before the controller's LeaderAndIsr for the new replica."""
    return any(key.startswith("brokers/") for key in changed)


def _remember(record: ExecutionRecord, key: str, values: dict[str, str], found: Mapping[str, str]) -> None:
    before = record.throttles_before.setdefault(key, {})
    for name in values:
        before.setdefault(name, found.get(name))


def write(cluster: Cluster, record: ExecutionRecord, wanted: dict[str, dict[str, str]]) -> None:
    """Every entity's throttles in one call; if it fails, one entity at a time, so the record names exactly the
    ones written before the one that fails (its error is the one raised)."""
    if not wanted:
        return
    try:
        cluster.alter_configs({_entity(key): values for key, values in sorted(wanted.items())})
    except KopsError:
        for key, values in sorted(wanted.items()):
            cluster.alter_config(*_entity(key), values)
            record.throttles_written.setdefault(key, {}).update(values)
        return
    for key, values in wanted.items():
        record.throttles_written.setdefault(key, {}).update(values)


def _entity(key: str) -> Entity:
    entity_type, _, name = key.partition("/")
    return entity_type, name


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
    end of the execution restores everything). Returns the entities restored, which the record forgets.
    All in one read and one write; if that fails, entity by entity: one whose broker does not answer (killed,
    say) is kept, for a later checkpoint or --resume, and the others are restored."""
    keys = [key for key in sorted(record.throttles_before) if not (busy and key in busy)]
    try:
        done = _restore_together(cluster, record, keys)
    except KopsError:
        done = []
        for key in keys:
            try:
                current = cluster.read_config(*_entity(key))
                cluster.alter_config(*_entity(key), _restored(record, key, current))
            except ConnectionFailed:
                continue
            done.append(key)
    for key in done:
        record.throttles_before.pop(key, None)
        record.throttles_written.pop(key, None)
    return done


def _restore_together(cluster: Cluster, record: ExecutionRecord, keys: list[str]) -> list[str]:
    if not keys:
        return []
    current = cluster.read_configs([_entity(key) for key in keys])
    cluster.alter_configs({_entity(key): _restored(record, key, current[_entity(key)]) for key in keys})
    return keys


def _restored(record: ExecutionRecord, key: str, current: Mapping[str, str]) -> dict[str, str | None]:
    """One entity's keys back to what was found, unless someone changed them since kops wrote them."""
    written = record.throttles_written.get(key, {})
    return {config_key: without_ours(config_key, current.get(config_key), written.get(config_key), old)
            for config_key, old in record.throttles_before[key].items()}


def without_ours(config_key: str, now: str | None, ours: str | None, before: str | None) -> str | None:
    """A throttle key's value with kops's part taken out: what was found, unless someone changed the key since
    kops wrote it; then, for a list, only kops's own entries go; a rate someone else set stays theirs."""
    if ours is None or now == ours:
        return before
    if config_key in TOPIC_KEYS and now is not None and now.strip() != "*":
        kept = _entries(now) - (_entries(ours) - _entries(before))
        return ",".join(sorted(kept)) if kept else before
    return now
