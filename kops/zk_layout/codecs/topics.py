"""`/brokers/topics/<topic>`: topic assignment v1–v3 (spec §1.5) plus the lab's KIP-253 counts (seed 003)."""

from __future__ import annotations

import base64
from typing import Any

from kops.errors import ZnodeFormatError
from kops.jsondoc import ShapeError, as_int, as_int_key, as_int_list, as_object, as_str, dumps_compact, field
from kops.model.topics import TopicAssignment
from kops.zk_layout.codecs.decoding import json_object, znode


def _replica_map(raw: Any, at: str) -> dict[int, tuple[int, ...]]:
    return {as_int_key(k, at): as_int_list(v, f"{at}.{k}") for k, v in as_object(raw, at).items()}


def check_topic_id(text: str, at: str = "topic_id") -> str:
    """Validate a topic id as Kafka's `Uuid.fromString`: URL-safe base64 of 16 bytes, no padding."""
    if len(text) > 24:
        raise ShapeError(f"{at} is not a Kafka UUID (too long): {text!r}")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        raise ShapeError(f"{at} is not a Kafka UUID (not URL-safe base64): {text!r}") from None
    if len(raw) != 16:
        raise ShapeError(f"{at} is not a Kafka UUID (decodes to {len(raw)} bytes, not 16): {text!r}")
    return text


def decode_topic(data: bytes | None, path: str) -> TopicAssignment:
    doc = json_object(data, path)
    with znode(path):
        replicas = _replica_map(field(doc, "partitions", ""), "partitions")
        adding = {p: r for p, r in _replica_map(doc.get("adding_replicas") or {}, "adding_replicas").items() if r}
        removing = {
            p: r for p, r in _replica_map(doc.get("removing_replicas") or {}, "removing_replicas").items() if r
        }
        topic_id = None if doc.get("topic_id") is None else check_topic_id(as_str(doc["topic_id"], "topic_id"))
        # Kafka ignores the version value; keep it when it is a plain integer, for faithful rewrites.
        version = doc["version"] if type(doc.get("version")) is int else 1
        initial = doc.get("initial_partition_count")
        undeleted = doc.get("undeleted_partition_count")
        for name, mapping in (("adding_replicas", adding), ("removing_replicas", removing)):
            unknown = sorted(set(mapping) - set(replicas))
            if unknown:
                raise ZnodeFormatError(path, f"{name} names partitions {unknown} that are not in partitions")
        return TopicAssignment(
            replicas=replicas,
            adding=adding,
            removing=removing,
            topic_id=topic_id,
            version=version,
            initial_partition_count=None if initial is None else as_int(initial, "initial_partition_count"),
            undeleted_partition_count=None if undeleted is None else as_int(undeleted, "undeleted_partition_count"),
        )


def _encode_map(mapping: dict[int, tuple[int, ...]]) -> dict[str, list[int]]:
    return {str(p): list(r) for p, r in sorted(mapping.items())}


def encode_topic(assignment: TopicAssignment, version: int | None = None) -> bytes:
    """Encode as 2.4+ Kafka writes it: v2 has adding/removing (always present), v3 adds topic_id when known."""
    version = assignment.version if version is None else version
    doc: dict[str, Any] = {"version": version, "partitions": _encode_map(assignment.replicas)}
    if version >= 3 and assignment.topic_id is not None:
        doc["topic_id"] = assignment.topic_id
    if version >= 2:
        doc["adding_replicas"] = _encode_map({p: r for p, r in assignment.adding.items() if r})
        doc["removing_replicas"] = _encode_map({p: r for p, r in assignment.removing.items() if r})
    if assignment.initial_partition_count is not None:
        doc["initial_partition_count"] = assignment.initial_partition_count
    if assignment.undeleted_partition_count is not None:
        doc["undeleted_partition_count"] = assignment.undeleted_partition_count
    return dumps_compact(doc)
