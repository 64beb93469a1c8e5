"""Kafka's topic-level configs: names, types, valid ranges and defaults (Kafka 3.x `LogConfig`).

Declarations are checked against this table (`kops validate`), and the planner uses the defaults so a
declared value equal to Kafka's default causes no perpetual diff. Values are always strings in ZooKeeper;
`normalize` turns a declared value into the string Kafka would store and read back as the same value.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass

INT = (-(2**31), 2**31 - 1)
LONG = (-(2**63), 2**63 - 1)
MAX_LONG = str(2**63 - 1)


@dataclass(frozen=True)
class ConfigSpec:
    kind: str  # int | long | double | boolean | enum | list | throttle | string
    default: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    note: str | None = None


TOPIC_CONFIGS: dict[str, ConfigSpec] = {
    "cleanup.policy": ConfigSpec("list", "delete", choices=("delete", "compact")),
    "compression.type": ConfigSpec("enum", "producer",
                                   choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    "delete.retention.ms": ConfigSpec("long", "86400000", 0),
    "file.delete.delay.ms": ConfigSpec("long", "60000", 0),
    "flush.messages": ConfigSpec("long", MAX_LONG, 1),
    "flush.ms": ConfigSpec("long", MAX_LONG, 0),
    "follower.replication.throttled.replicas": ConfigSpec("throttle", ""),
    "index.interval.bytes": ConfigSpec("int", "4096", 0),
    "leader.replication.throttled.replicas": ConfigSpec("throttle", ""),
    "local.retention.bytes": ConfigSpec("long", "-2", -2),
    "local.retention.ms": ConfigSpec("long", "-2", -2),
    "max.compaction.lag.ms": ConfigSpec("long", MAX_LONG, 1),
    "max.message.bytes": ConfigSpec("int", "1048588", 0),
    "message.downconversion.enable": ConfigSpec("boolean", "true"),
    "message.format.version": ConfigSpec("string", "3.0-IV1", note="ignored by Kafka 3.0+ with IBP >= 3.0"),
    "message.timestamp.after.max.ms": ConfigSpec("long", MAX_LONG, 0),
    "message.timestamp.before.max.ms": ConfigSpec("long", MAX_LONG, 0),
    "message.timestamp.difference.max.ms": ConfigSpec("long", MAX_LONG, 0),
    "message.timestamp.type": ConfigSpec("enum", "CreateTime", choices=("CreateTime", "LogAppendTime")),
    "min.cleanable.dirty.ratio": ConfigSpec("double", "0.5", 0, 1),
    "min.compaction.lag.ms": ConfigSpec("long", "0", 0),
    "min.insync.replicas": ConfigSpec("int", "1", 1),
    "preallocate": ConfigSpec("boolean", "false"),
    "remote.storage.enable": ConfigSpec("boolean", "false"),
    "retention.bytes": ConfigSpec("long", "-1"),
    "retention.ms": ConfigSpec("long", "604800000", -1),
    "segment.bytes": ConfigSpec("int", "1073741824", 14),
    "segment.index.bytes": ConfigSpec("int", "10485760", 4),
    "segment.jitter.ms": ConfigSpec("long", "0", 0),
    "segment.ms": ConfigSpec("long", "604800000", 1),
    "unclean.leader.election.enable": ConfigSpec("boolean", "false"),
}


def suggest(key: str) -> str | None:
    """The closest known config name, for a "did you mean" hint."""
    matches = difflib.get_close_matches(key, TOPIC_CONFIGS, n=1, cutoff=0.6)
    return matches[0] if matches else None


def _number_text(value: object) -> str:
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {str(value).lower()}")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def normalize(key: str, value: object) -> str:
    """The string Kafka stores for a declared value; ValueError says what Kafka would reject and why."""
    spec = TOPIC_CONFIGS[key]
    check = _NORMALIZERS.get(spec.kind)
    return str(value) if check is None else check(key, spec, value)


def _integer(key: str, spec: ConfigSpec, value: object) -> str:
    text = _number_text(value)
    try:
        number = int(text, 10)
    except ValueError:
        raise ValueError(f"{key} must be an integer, got {text!r}") from None
    low, high = INT if spec.kind == "int" else LONG
    low = max(low, int(spec.minimum)) if spec.minimum is not None else low
    if not low <= number <= high:
        allowed = f"at least {low}" if high in (INT[1], LONG[1]) else f"between {low} and {high}"
        raise ValueError(f"{key} must be {allowed}, got {number}")
    return str(number)


def _double(key: str, spec: ConfigSpec, value: object) -> str:
    text = _number_text(value)
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"{key} must be a number, got {text!r}") from None
    if (spec.minimum is not None and number < spec.minimum) or (spec.maximum is not None and number > spec.maximum):
        raise ValueError(f"{key} must be between {spec.minimum:g} and {spec.maximum:g}, got {text}")
    return text


def _boolean(key: str, spec: ConfigSpec, value: object) -> str:
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise ValueError(f"{key} must be true or false, got {value!r}")
    return text


def _enum(key: str, spec: ConfigSpec, value: object) -> str:
    text = str(value).strip()
    if text not in spec.choices:
        raise ValueError(f"{key} must be one of {', '.join(spec.choices)}, got {text!r}")
    return text


def _list(key: str, spec: ConfigSpec, value: object) -> str:
    items = value if isinstance(value, list) else str(value).split(",")
    cleaned = [str(i).strip() for i in items if str(i).strip()]
    bad = [i for i in cleaned if i not in spec.choices]
    if bad or not cleaned:
        raise ValueError(f"{key} must be a list of {', '.join(spec.choices)}, got {value!r}")
    return ",".join(cleaned)


def _throttle(key: str, spec: ConfigSpec, value: object) -> str:
    text = str(value).strip()
    if text == "*":
        return text
    for element in text.split(","):
        element = element.strip()
        if element and not _is_throttle_entry(element):
            raise ValueError(f"{key} must be '*' or a list of partition:broker, got {element!r}")
    return text


_NORMALIZERS: dict[str, Callable[[str, ConfigSpec, object], str]] = {
    "int": _integer, "long": _integer, "double": _double, "boolean": _boolean, "enum": _enum, "list": _list,
    "throttle": _throttle,
}


def _is_throttle_entry(element: str) -> bool:
    partition, sep, broker = element.partition(":")
    return bool(sep) and partition.isdigit() and broker.isdigit()


def is_default(key: str, value: str) -> bool:
    spec = TOPIC_CONFIGS.get(key)
    if spec is None:
        return False
    try:
        return normalize(key, value) == normalize(key, spec.default)
    except ValueError:
        return False
