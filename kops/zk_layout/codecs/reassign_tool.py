"""kafka-reassign-partitions.sh JSON (`--reassignment-json-file`, `--generate` output), spec §3.1.

This is the file operators already have; kops reads it (`plan --import-kafka`) and writes it
(`plan --export-kafka`). Unlike the znode it carries `log_dirs`: per replica, "any" (no placement) or the
absolute path of the broker's log dir the replica is to live in, which Kafka's tool sends as AlterReplicaLogDirs
(KIP-113) after the reassignment. Read as the tool reads it (ReassignPartitionsCommand
`parsePartitionReassignmentData`), and refused earlier than the broker would refuse it (a path that is not
absolute is never one of a broker's dirs: LOG_DIR_NOT_FOUND). A plan's moves and disk moves are written back
with their dirs (`exported`): a disk move as an entry whose replicas stay as they are, which the tool runs as
AlterReplicaLogDirs alone (docs/design/jbod.md §4).
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
from kops.model.plan import Plan

ANY_LOG_DIR = "any"


@dataclass(frozen=True, order=True)
class ToolReassignment:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...] | None = None

    @property
    def placed(self) -> list[tuple[int, str]]:
        """(broker, log dir) of each replica the entry places in a dir, in replica order."""
        return [(b, d) for b, d in zip(self.replicas, self.log_dirs or (), strict=False) if d != ANY_LOG_DIR]


def read_reassignment_json(text: bytes | str, where: str, disk_moves: bool = False) -> list[ToolReassignment]:
    """Parse and validate as the tool does; errors name the file and the entry. Unless the caller plans them
    (`disk_moves`: `kops plan --import-kafka`), entries that name log dirs are refused in one line (exit 1)."""
    entries = _read(text, where)
    placed = [(e, broker, path) for e in entries for broker, path in e.placed]
    if placed and not disk_moves:
        entry, broker, path = placed[0]
        raise DocumentError(f"this reader takes no log dirs: {len(placed)} replica(s) of this file name a log dir, "
                            f"first {entry.topic}-{entry.partition} on broker {broker} to {path}",
                            where=where, hint="kops plan --import-kafka FILE -b BOOTSTRAP plans them (placed "
                                              "replicas and disk moves, which kops apply runs), or write \"any\" "
                                              "for them")
    return entries


def _read(text: bytes | str, where: str) -> list[ToolReassignment]:
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
        raise DocumentError(str(exc), where=where, hint=_hint(text)) from None


def _hint(text: bytes | str) -> str:
    """What to do: the tool's --generate prints two headed JSON documents, and its proposal is the second."""
    said = text.decode(errors="replace") if isinstance(text, bytes) else text
    if "Proposed partition reassignment configuration" in said:
        return ("this is kafka-reassign-partitions --generate's output: keep only the JSON line after 'Proposed "
                "partition reassignment configuration'")
    return "fix the kafka-reassign-partitions JSON"


def _log_dirs(entry: dict, at: str, topic: str, partition: int, replicas: tuple[int, ...]) -> tuple[str, ...] | None:
    """Absent (every replica "any"), or one entry per replica: "any" or an absolute path. `null` and a size
    that differs from the replicas' are refused as Kafka's tool refuses them; a path that is not absolute as the
    broker would (LOG_DIR_NOT_FOUND), here with the entry."""
    if "log_dirs" not in entry:
        return None
    if entry["log_dirs"] is None:
        raise ShapeError(f"{at}.log_dirs is null for {topic}-{partition}: Kafka's tool refuses it; leave the key out "
                         f"or write \"any\" for each replica")
    log_dirs = as_str_list(entry["log_dirs"], f"{at}.log_dirs")
    if len(log_dirs) != len(replicas):
        raise ShapeError(f"{at}: Size of replicas list {list(replicas)} is different from size of log dirs list "
                         f"{list(log_dirs)} for partition {topic}-{partition}")
    for i, d in enumerate(log_dirs):
        if d != ANY_LOG_DIR and not d.startswith("/"):
            raise ShapeError(f"{at}.log_dirs[{i}] is {d!r} for {topic}-{partition}: a broker knows its log dirs by "
                             f"absolute path (kops state -b shows them), or write \"any\"")
    return log_dirs


def write_reassignment_json(entries: Iterable[ToolReassignment]) -> bytes:
    """Sorted by (topic, partition) as the 2.6+ tool prints; `log_dirs` "any" unless given."""
    rows = []
    for e in sorted(entries):
        dirs = list(e.log_dirs) if e.log_dirs is not None else [ANY_LOG_DIR] * len(e.replicas)
        rows.append({"topic": e.topic, "partition": e.partition, "replicas": list(e.replicas), "log_dirs": dirs})
    return dumps_compact({"version": 1, "partitions": rows})


def exported(plan: Plan) -> list[ToolReassignment]:
    """The plan's moves and disk moves as the tool's entries, one per partition: its target replicas, and
    `log_dirs` where any replica is placed (the new replicas' `to_dirs`, the disk moves' target dirs); a
    partition both moved and moved between dirs is one entry, as the tool takes it."""
    replicas: dict[tuple[str, int], tuple[int, ...]] = {}
    dirs: dict[tuple[str, int], dict[int, str]] = {}
    for disk in plan.disk_moves:
        replicas[(disk.topic, disk.partition)] = disk.replicas
        dirs.setdefault((disk.topic, disk.partition), {})[disk.broker] = disk.to_dir
    for move in plan.moves:
        replicas[(move.topic, move.partition)] = move.to_replicas
        dirs.setdefault((move.topic, move.partition), {}).update(move.placed)
    return [ToolReassignment(topic, partition, targets,
                             tuple(dirs[(topic, partition)].get(b, ANY_LOG_DIR) for b in targets)
                             if dirs.get((topic, partition)) else None)
            for (topic, partition), targets in sorted(replicas.items())]
