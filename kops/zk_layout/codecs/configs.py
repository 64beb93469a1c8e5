"""`/config/<type>/<name>`: entity config overrides (spec §1.13). Values are always JSON strings."""

from __future__ import annotations

from kops.jsondoc import as_str_map, dumps_compact
from kops.zk_layout.codecs.decoding import json_object, znode


def decode_config(data: bytes | None, path: str) -> dict[str, str]:
    """The override map. Empty data or a missing `config` means no overrides, as in Kafka."""
    if data is None or len(data) == 0:
        return {}
    doc = json_object(data, path)
    with znode(path):
        return as_str_map(doc.get("config") or {}, "config")


def encode_config(config: dict[str, str]) -> bytes:
    for key, value in config.items():
        if not isinstance(value, str):
            raise ValueError(f"config value of {key!r} must be a string, got {type(value).__name__}")
    return dumps_compact({"version": 1, "config": dict(sorted(config.items()))})
