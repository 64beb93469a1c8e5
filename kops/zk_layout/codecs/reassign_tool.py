"""kafka-reassign-partitions.sh JSON (`--reassignment-json-file`, `--generate` output), spec §3.1.

This is the file operators already have; kops reads it (`plan --import-kafka`) and writes it
(`plan --export-kafka`). Unlike the znode it carries `log_dirs` ("any" = no placement).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kops.errors import DocumentError
from kops.jsondoc import (
    ShapeError,
    as_int,
    as_int_list,
    as_list,
    as_object,
    as_str,
    as_str_list,
    dumps_compact,
    field,
    parse_json,
)

ANY_LOG_DIR = "any"


@dataclass(frozen=True, order=True)
class ToolReassignment:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...] | None = None


def read_reassignment_json(text: bytes | str, where: str) -> list[ToolReassignment]:
    """Parse and validate as the tool does; errors name the file and the entry."""
    try:
        doc = as_object(parse_json(text), "document")
        version = doc.get("version", 1)
        if version != 1:
            raise ShapeError(f"Not supported version field value {version!r} (only 1)")
        entries = as_list(field(doc, "partitions", ""), "partitions")
        if not entries:
            raise ShapeError("partitions is empty: nothing to reassign")
        result = []
        seen: set[tuple[str, int]] = set()
        for i, raw in enumerate(entries):
            at = f"partitions[{i}]"
            entry = as_object(raw, at)
            topic = as_str(field(entry, "topic", at), f"{at}.topic")
            partition = as_int(field(entry, "partition", at), f"{at}.partition")
            replicas = as_int_list(field(entry, "replicas", at), f"{at}.replicas")
            if not replicas:
                raise ShapeError(f"{at}: empty replica list for {topic}-{partition}")
            if len(set(replicas)) != len(replicas):
                raise ShapeError(f"{at}: duplicate replicas {list(replicas)} for {topic}-{partition}")
            log_dirs = _log_dirs(entry, at, topic, partition, replicas)
            if (topic, partition) in seen:
                raise ShapeError(f"{at}: duplicate partition {topic}-{partition}")
            seen.add((topic, partition))
            result.append(ToolReassignment(topic, partition, replicas, log_dirs))
        return result
    except ShapeError as exc:
        raise DocumentError(str(exc), where=where, hint="fix the kafka-reassign-partitions JSON") from None


def _log_dirs(entry: dict, at: str, topic: str, partition: int, replicas: tuple[int, ...]) -> tuple[str, ...] | None:
    """Absent, or "any" for every replica: kops moves replicas between brokers, not between a broker's disks.
    `null` is refused as Kafka's tool refuses it; a real path would be silently lost, so it is refused too."""
    if "log_dirs" not in entry:
        return None
    if entry["log_dirs"] is None:
        raise ShapeError(f"{at}.log_dirs is null for {topic}-{partition}: Kafka's tool refuses it; leave the key out "
                         f"or write \"any\" for each replica")
    log_dirs = as_str_list(entry["log_dirs"], f"{at}.log_dirs")
    if len(log_dirs) != len(replicas):
        raise ShapeError(f"{at}: Size of replicas list {list(replicas)} is different from size of log dirs list "
                         f"{list(log_dirs)} for partition {topic}-{partition}")
    placed = [d for d in log_dirs if d != ANY_LOG_DIR]
    if placed:
        raise ShapeError(f"{at}.log_dirs names {placed[0]!r} for {topic}-{partition}: kops moves replicas between "
                         f"brokers, not between a broker's disks; use \"any\" (or kafka-reassign-partitions for "
                         f"a disk move)")
    return log_dirs


def write_reassignment_json(entries: Iterable[ToolReassignment]) -> bytes:
    """Sorted by (topic, partition) as the 2.6+ tool prints; `log_dirs` "any" unless given."""
    rows = []
    for e in sorted(entries):
        dirs = list(e.log_dirs) if e.log_dirs is not None else [ANY_LOG_DIR] * len(e.replicas)
        rows.append({"topic": e.topic, "partition": e.partition, "replicas": list(e.replicas), "log_dirs": dirs})
    return dumps_compact({"version": 1, "partitions": rows})
