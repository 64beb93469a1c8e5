"""Admin request znodes: `/admin/reassign_partitions`, `/admin/preferred_replica_election` (spec §1.8–1.9).

The reassignment znode is the one place Kafka decodes with Jackson data-binding instead of tree access: an
unknown field anywhere (`log_dirs`, `original_replicas`) makes the whole znode invalid, and the controller then
starts none of its moves. So the decoder here is strict about field names, and the encoder writes exactly
`{"version":1,"partitions":[{"topic","partition","replicas"}]}`. Jackson's default scalar coercions
(ALLOW_COERCION_OF_SCALARS, ACCEPT_FLOAT_AS_INT) are mirrored so "1" and 1.0 read as 1, as they would in Kafka.
The lab's KIP-236 queue znode (`/admin/reassign_partitions_queue`) uses the same format.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kops.errors import ZnodeFormatError
from kops.jsondoc import INT32, ShapeError, as_int, as_list, as_object, as_str, dumps_compact, field
from kops.model.partitions import TopicPartition
from kops.zk_layout.codecs.decoding import json_object, znode


@dataclass(frozen=True, order=True)
class ReassignmentTarget:
    """One entry of the reassignment znode: the target replica list of a partition (first = preferred leader)."""

    topic: str
    partition: int
    replicas: tuple[int, ...]


_ENTRY_FIELDS = frozenset({"topic", "partition", "replicas"})
_TOP_FIELDS = frozenset({"version", "partitions"})


def _bound_int(value: Any, at: str) -> int:
    """An Int as Jackson data-binding reads one: integers, integral floats and numeric strings."""
    if (type(value) is float and value.is_integer()
            or type(value) is str and re.fullmatch(r"\s*-?[0-9]{1,10}\s*", value)):
        value = int(value)
    return as_int(value, at, INT32)


def decode_reassignment(data: bytes | None, path: str) -> list[ReassignmentTarget]:
    doc = json_object(data, path)
    with znode(path):
        unknown = sorted(set(doc) - _TOP_FIELDS)
        if unknown:
            raise ShapeError(f"unknown field {unknown[0]!r}: Kafka ignores the whole reassignment")
        if "version" in doc and doc["version"] is not None:
            _bound_int(doc["version"], "version")
        targets = []
        seen: set[tuple[str, int]] = set()
        for i, raw in enumerate(as_list(field(doc, "partitions", ""), "partitions")):
            at = f"partitions[{i}]"
            entry = as_object(raw, at)
            extra = sorted(set(entry) - _ENTRY_FIELDS)
            if extra:
                raise ShapeError(f"{at} has unknown field {extra[0]!r}: Kafka ignores the whole reassignment")
            topic = as_str(field(entry, "topic", at), f"{at}.topic")
            partition = _bound_int(field(entry, "partition", at), f"{at}.partition")
            replicas = tuple(
                _bound_int(r, f"{at}.replicas[{j}]")
                for j, r in enumerate(as_list(field(entry, "replicas", at), f"{at}.replicas"))
            )
            if (topic, partition) in seen:
                raise ZnodeFormatError(path, f"{at}: {topic}-{partition} is listed twice")
            seen.add((topic, partition))
            targets.append(ReassignmentTarget(topic, partition, replicas))
        return targets


def encode_reassignment(targets: Iterable[ReassignmentTarget]) -> bytes:
    entries = sorted(targets)
    keys = [(t.topic, t.partition) for t in entries]
    if len(set(keys)) != len(keys):
        raise ValueError("a reassignment may name each partition once")
    for t in entries:
        if not t.replicas or len(set(t.replicas)) != len(t.replicas):
            raise ValueError(f"{t.topic}-{t.partition}: replicas must be non-empty and distinct")
    return dumps_compact(
        {
            "version": 1,
            "partitions": [{"topic": t.topic, "partition": t.partition, "replicas": list(t.replicas)} for t in entries],
        }
    )


def decode_partition_list(data: bytes | None, path: str) -> list[TopicPartition]:
    """`{"version":1,"partitions":[{"topic","partition"}]}` (preferred election, ISR change notifications).

    Read with tree access as Kafka does: unknown fields ignored, a missing `partitions` is an empty list.
    """
    doc = json_object(data, path)
    with znode(path):
        result = []
        for i, raw in enumerate(as_list(doc.get("partitions") or [], "partitions")):
            entry = as_object(raw, f"partitions[{i}]")
            result.append(
                TopicPartition(
                    as_str(field(entry, "topic", f"partitions[{i}]"), f"partitions[{i}].topic"),
                    as_int(field(entry, "partition", f"partitions[{i}]"), f"partitions[{i}].partition"),
                )
            )
        return result


def encode_partition_list(partitions: Iterable[TopicPartition]) -> bytes:
    return dumps_compact(
        {
            "version": 1,
            "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in sorted(set(partitions))],
        }
    )
