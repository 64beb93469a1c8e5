"""What Kafka's own admin tools write to ZooKeeper, written the same way (spec §4, §8).

Topic creation writes `/config/topics/<t>` before `/brokers/topics/<t>` and sends no notification; a config
change is a read-modify-write of the whole map followed by a v2 `config_change_` notification; a reassignment
is started by creating `/admin/reassign_partitions` with exactly topic/partition/replicas. kops is stricter
than the tools where that costs nothing: config and assignment rewrites are conditional on the znode version,
so a concurrent writer is detected instead of overwritten.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping

from kops.errors import KopsError
from kops.model.partitions import TopicPartition
from kops.model.topics import TopicAssignment
from kops.zk_layout import paths
from kops.zk_layout.client import NodeExists, NodeMissing, VersionConflict, ZkClient
from kops.zk_layout.codecs.admin_requests import ReassignmentTarget, encode_partition_list, encode_reassignment
from kops.zk_layout.codecs.configs import decode_config, encode_config
from kops.zk_layout.codecs.notifications import ConfigChange, encode_config_change
from kops.zk_layout.codecs.topics import decode_topic, encode_topic

_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_LENGTH = 249


class AdminRefused(KopsError):
    """Kafka's tools would refuse this operation too."""


def check_topic_name(name: str) -> None:
    """Kafka's topic name rules (Topic.validate)."""
    if not name or name in (".", ".."):
        raise AdminRefused(f"illegal topic name {name!r}", hint="names cannot be empty, '.' or '..'")
    if len(name) > MAX_TOPIC_LENGTH:
        raise AdminRefused(f"topic name is {len(name)} characters long", hint=f"at most {MAX_TOPIC_LENGTH}")
    if not _LEGAL_TOPIC.match(name):
        raise AdminRefused(f"illegal topic name {name!r}", hint="use only ASCII letters, digits, '.', '_' and '-'")


def create_topic(
    client: ZkClient,
    name: str,
    assignment: Mapping[int, tuple[int, ...]],
    config: Mapping[str, str] | None = None,
    topic_id: str | None = None,
) -> None:
    """Create a topic as AdminZkClient.createTopicWithAssignment does."""
    check_topic_name(name)
    if client.exists(paths.delete_topic(name)):
        raise AdminRefused(f"topic {name!r} is marked for deletion", hint="wait until the deletion completes")
    if client.exists(paths.topic(name)):
        raise AdminRefused(f"topic {name!r} already exists")
    numbers = sorted(assignment)
    if numbers != list(range(len(numbers))) or not numbers:
        raise AdminRefused(f"topic {name!r}: partitions must be numbered 0..n-1")
    sizes = {len(r) for r in assignment.values()}
    if len(sizes) != 1:
        raise AdminRefused(f"topic {name!r}: every partition needs the same replication factor")
    for p, replicas in assignment.items():
        if len(set(replicas)) != len(replicas):
            raise AdminRefused(f"topic {name!r} partition {p}: duplicate replicas {list(replicas)}")
    config_path = paths.config("topics", name)
    data = encode_config(dict(config or {}))
    if client.exists(config_path):
        client.set(config_path, data)
    else:
        client.create(config_path, data, makepath=True)
    try:
        client.create(
            paths.topic(name),
            encode_topic(TopicAssignment(replicas={p: tuple(r) for p, r in assignment.items()}, topic_id=topic_id)),
            makepath=True,
        )
    except NodeExists:
        raise AdminRefused(f"topic {name!r} already exists") from None


def write_config(client: ZkClient, entity_type: str, name: str, config: Mapping[str, str], version: int = -1) -> None:
    """Write an entity's whole override map, then notify the brokers (AdminZkClient.changeEntityConfig)."""
    path = paths.config(entity_type, name)
    data = encode_config(dict(config))
    if version == -1 and client.exists(path) is None:
        client.create(path, data, makepath=True)
    else:
        client.set(path, data, version)
    notify_config_change(client, entity_type, name)


def notify_config_change(client: ZkClient, entity_type: str, name: str) -> str:
    return client.create(
        f"{paths.CONFIG_CHANGES}/{paths.CONFIG_CHANGE_PREFIX}",
        encode_config_change(ConfigChange(entity_type, name)),
        sequence=True,
        makepath=True,
    )


def read_config(client: ZkClient, entity_type: str, name: str) -> tuple[dict[str, str], int]:
    """The override map and the znode version (-1 when the znode does not exist)."""
    path = paths.config(entity_type, name)
    node = client.get(path)
    if node is None:
        return {}, -1
    return decode_config(node.data, path), node.stat.version


def alter_config(
    client: ZkClient, entity_type: str, name: str, changes: Mapping[str, str | None], attempts: int = 5
) -> dict[str, str]:
    """Set (str) or remove (None) keys with a conditional read-modify-write; returns the map found before."""
    for _ in range(attempts):
        before, version = read_config(client, entity_type, name)
        after = dict(before)
        for key, value in changes.items():
            if value is None:
                after.pop(key, None)
            else:
                after[key] = value
        if after == before and version != -1:
            return before
        try:
            write_config(client, entity_type, name, after, version)
            return before
        except (VersionConflict, NodeExists, NodeMissing):
            continue
    raise KopsError(
        f"config of {entity_type}/{name} kept changing under kops",
        where=paths.config(entity_type, name),
        hint="another tool is writing it; retry when it is done",
    )


def _read_topic(client: ZkClient, name: str) -> tuple[TopicAssignment, int]:
    """The topic znode and its version, for a conditional rewrite."""
    path = paths.topic(name)
    node = client.get(path)
    if node is None:
        raise AdminRefused(f"topic {name!r} does not exist")
    return decode_topic(node.data, path), node.stat.version


def add_partitions(client: ZkClient, name: str, new: Mapping[int, tuple[int, ...]]) -> None:
    """Append partitions, preserving topic_id and in-flight adding/removing (AdminZkClient.addPartitions)."""
    current, version = _read_topic(client, name)
    start = len(current.replicas)
    if current.undeleted_partition_count is not None and current.undeleted_partition_count < start:
        raise AdminRefused(f"topic {name!r}: partitions {current.undeleted_partition_count}..{start - 1} are marked "
                           f"for deletion; it cannot be expanded until they have drained and been removed (KIP-253)")
    if sorted(new) != list(range(start, start + len(new))):
        raise AdminRefused(f"topic {name!r}: new partitions must be numbered from {start}")
    rf = len(current.replicas.get(0, ()))
    if any(len(r) != rf for r in new.values()):
        raise AdminRefused(f"topic {name!r}: new partitions need replication factor {rf}")
    merged = dict(current.replicas)
    merged.update({p: tuple(r) for p, r in new.items()})
    updated = TopicAssignment(
        replicas=merged,
        adding=current.adding,
        removing=current.removing,
        topic_id=current.topic_id,
        version=max(current.version, 2),
        initial_partition_count=current.initial_partition_count,
        undeleted_partition_count=current.undeleted_partition_count,
    )
    client.set(paths.topic(name), encode_topic(updated), version)


def mark_partitions_for_deletion(client: ZkClient, name: str, undeleted: int) -> None:
    """KIP-253 (lab clusters): lower `undeleted_partition_count`; the controller marks, drains and deletes.

    As the KIP's tool does: only lower, never below `initial_partition_count`; conditional on the version.
    """
    current, version = _read_topic(client, name)
    count = len(current.replicas)
    now = current.undeleted_partition_count if current.undeleted_partition_count is not None else count
    initial = current.initial_partition_count if current.initial_partition_count is not None else count
    if not initial <= undeleted < now:
        raise AdminRefused(f"topic {name!r}: undeleted_partition_count must be lowered from {now} and stay at or "
                           f"above initial_partition_count {initial}, got {undeleted}")
    updated = TopicAssignment(current.replicas, current.adding, current.removing, current.topic_id,
                              max(current.version, 2), initial, undeleted)
    client.set(paths.topic(name), encode_topic(updated), version)


def start_reassignment(client: ZkClient, targets: Iterable[ReassignmentTarget]) -> None:
    """Create `/admin/reassign_partitions`; refuse, as Kafka's tool does, while one exists."""
    data = encode_reassignment(targets)
    try:
        client.create(paths.REASSIGN_PARTITIONS, data, makepath=True)
    except NodeExists:
        raise AdminRefused(
            "a partition reassignment is already in progress",
            where=paths.REASSIGN_PARTITIONS,
            hint="wait for it to finish (kops status) before starting another",
        ) from None


def queue_reassignment(client: ZkClient, targets: Iterable[ReassignmentTarget]) -> None:
    """KIP-236's queue (`/admin/reassign_partitions_queue`, the same format): moves added to those in flight."""
    try:
        client.create(paths.REASSIGN_QUEUE, encode_reassignment(targets), makepath=True)
    except NodeExists:
        raise AdminRefused("queued moves are waiting for the controller", where=paths.REASSIGN_QUEUE,
                           hint="the controller deletes the queue znode when it takes the moves in; retry "
                                "then") from None


def request_preferred_election(client: ZkClient, partitions: Iterable[TopicPartition]) -> None:
    try:
        client.create(paths.PREFERRED_REPLICA_ELECTION, encode_partition_list(partitions), makepath=True)
    except NodeExists:
        raise AdminRefused(
            "a preferred replica election is already in progress",
            where=paths.PREFERRED_REPLICA_ELECTION,
            hint="the controller deletes the znode when done; retry then",
        ) from None


def delete_topic(client: ZkClient, name: str) -> None:
    with contextlib.suppress(NodeExists):  # already queued
        client.create(paths.delete_topic(name), makepath=True)
