"""kafka-log-dirs.sh --describe output (spec §5): per broker, per log dir, the size of every replica.

The tool prints two status lines before the JSON document; a collector may add a top-level `timestamp`
(epoch ms). Key order differs between Kafka versions, so only the parsed structure matters.
"""

from __future__ import annotations

from dataclasses import dataclass

from kops.errors import DocumentError
from kops.jsondoc import INT64, ShapeError, as_bool, as_int, as_list, as_object, as_str, field, parse_json


@dataclass(frozen=True)
class ReplicaSize:
    topic: str
    partition: int
    size: int
    offset_lag: int = 0
    is_future: bool = False


@dataclass(frozen=True)
class LogDir:
    path: str
    error: str | None
    replicas: tuple[ReplicaSize, ...]


@dataclass(frozen=True)
class BrokerLogDirs:
    broker: int
    log_dirs: tuple[LogDir, ...]


@dataclass(frozen=True)
class LogDirsReport:
    brokers: tuple[BrokerLogDirs, ...]
    timestamp_ms: int | None = None


def split_topic_partition(text: str, at: str) -> tuple[str, int]:
    """`TopicPartition.toString` is `<topic>-<partition>`; topics may contain '-', so split at the last one."""
    topic, sep, number = text.rpartition("-")
    if not sep or not topic or not number.isdigit():
        raise ShapeError(f"{at} is not '<topic>-<partition>': {text!r}")
    return topic, int(number)


def json_start(text: str) -> int:
    """Offset of the JSON document, skipping the tool's status lines ("Querying brokers ...")."""
    for offset, line in _lines_with_offsets(text):
        if line.lstrip().startswith("{"):
            return offset + (len(line) - len(line.lstrip()))
    raise ShapeError("no JSON document found (expected a line starting with '{')")


def _lines_with_offsets(text: str):
    offset = 0
    for line in text.splitlines(keepends=True):
        yield offset, line
        offset += len(line)


def parse_log_dirs(text: str | bytes, where: str) -> LogDirsReport:
    try:
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8")
        doc = as_object(parse_json(text[json_start(text):]), "document")
        return decode_log_dirs_document(doc)
    except (ShapeError, UnicodeDecodeError) as exc:
        raise DocumentError(f"not kafka-log-dirs output: {exc}", where=where) from None


def decode_log_dirs_document(doc: dict) -> LogDirsReport:
    brokers = []
    for i, raw in enumerate(as_list(field(doc, "brokers", ""), "brokers")):
        at = f"brokers[{i}]"
        entry = as_object(raw, at)
        dirs = []
        for j, raw_dir in enumerate(as_list(field(entry, "logDirs", at), f"{at}.logDirs")):
            dat = f"{at}.logDirs[{j}]"
            d = as_object(raw_dir, dat)
            error = d.get("error")
            replicas = []
            for k, raw_p in enumerate(as_list(d.get("partitions") or [], f"{dat}.partitions")):
                pat = f"{dat}.partitions[{k}]"
                p = as_object(raw_p, pat)
                topic, partition = split_topic_partition(as_str(field(p, "partition", pat), f"{pat}.partition"), pat)
                replicas.append(
                    ReplicaSize(
                        topic,
                        partition,
                        as_int(field(p, "size", pat), f"{pat}.size", INT64),
                        as_int(p.get("offsetLag", 0), f"{pat}.offsetLag", INT64),
                        as_bool(p.get("isFuture", False), f"{pat}.isFuture"),
                    )
                )
            dirs.append(
                LogDir(
                    as_str(field(d, "logDir", dat), f"{dat}.logDir"),
                    None if error is None else as_str(error, f"{dat}.error"),
                    tuple(replicas),
                )
            )
        brokers.append(BrokerLogDirs(as_int(field(entry, "broker", at), f"{at}.broker"), tuple(dirs)))
    ts = doc.get("timestamp")
    return LogDirsReport(tuple(brokers), None if ts is None else as_int(ts, "timestamp", INT64))


def encode_log_dirs(report: LogDirsReport) -> dict:
    """The document as the tool prints it (plus `timestamp` when known); callers serialise it."""
    doc: dict = {
        "version": 1,
        "brokers": [
            {
                "broker": b.broker,
                "logDirs": [
                    {
                        "logDir": d.path,
                        "error": d.error,
                        "partitions": [
                            {
                                "partition": f"{r.topic}-{r.partition}",
                                "size": r.size,
                                "offsetLag": r.offset_lag,
                                "isFuture": r.is_future,
                            }
                            for r in d.replicas
                        ],
                    }
                    for d in b.log_dirs
                ],
            }
            for b in report.brokers
        ],
    }
    if report.timestamp_ms is not None:
        doc["timestamp"] = report.timestamp_ms
    return doc
