"""Sequential notification znodes: ISR changes, log-dir events, config changes v1–v2 (spec §1.11–1.14)."""

from __future__ import annotations

from dataclasses import dataclass

from kops.errors import ZnodeFormatError
from kops.jsondoc import as_int, as_str, dumps_compact, field
from kops.model.partitions import TopicPartition
from kops.zk_layout.codecs.admin_requests import decode_partition_list, encode_partition_list
from kops.zk_layout.codecs.decoding import json_object, znode

LOG_DIR_FAILURE = 1
CONFIG_ENTITY_TYPES = frozenset({"topics", "clients", "users", "brokers", "ips"})


def decode_isr_change(data: bytes | None, path: str) -> list[TopicPartition]:
    return decode_partition_list(data, path)


def encode_isr_change(partitions: list[TopicPartition]) -> bytes:
    return encode_partition_list(partitions)


@dataclass(frozen=True)
class LogDirEvent:
    broker: int
    event: int = LOG_DIR_FAILURE


def decode_log_dir_event(data: bytes | None, path: str) -> LogDirEvent:
    doc = json_object(data, path)
    with znode(path):
        return LogDirEvent(as_int(field(doc, "broker", ""), "broker"), as_int(field(doc, "event", ""), "event"))


def encode_log_dir_event(event: LogDirEvent) -> bytes:
    return dumps_compact({"version": 1, "broker": event.broker, "event": event.event})


@dataclass(frozen=True)
class ConfigChange:
    """A config change notification: which entity to re-read. `entity_path` is relative, e.g. `topics/foo`."""

    entity_type: str
    entity_name: str

    @property
    def entity_path(self) -> str:
        return f"{self.entity_type}/{self.entity_name}"


def decode_config_change(data: bytes | None, path: str) -> ConfigChange:
    doc = json_object(data, path)
    with znode(path):
        version = as_int(field(doc, "version", ""), "version")
        if version == 1:
            entity_type = as_str(field(doc, "entity_type", ""), "entity_type")
            if entity_type not in ("topics", "clients"):
                raise ZnodeFormatError(path, f"v1 notifications only name topics or clients, not {entity_type!r}")
            return ConfigChange(entity_type, as_str(field(doc, "entity_name", ""), "entity_name"))
        if version == 2:
            entity_path = as_str(field(doc, "entity_path", ""), "entity_path")
            entity_type, sep, name = entity_path.partition("/")
            if not sep or not name or entity_path.startswith("/") or entity_type not in CONFIG_ENTITY_TYPES:
                raise ZnodeFormatError(
                    path, f"entity_path must be '<type>/<name>' relative to /config, got {entity_path!r}"
                )
            return ConfigChange(entity_type, name)
        raise ZnodeFormatError(path, f"unsupported config change notification version {version}")


def encode_config_change(change: ConfigChange) -> bytes:
    """Always v2, as every 2.x/3.x Kafka writes."""
    return dumps_compact({"version": 2, "entity_path": change.entity_path})
