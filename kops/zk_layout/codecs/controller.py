"""`/controller` (v1–v2) and `/controller_epoch` (spec §1.1–1.2)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kops.errors import ZnodeFormatError
from kops.jsondoc import as_int, as_str, dumps_compact, field
from kops.zk_layout.codecs.decoding import json_object, znode


@dataclass(frozen=True)
class ControllerRegistration:
    broker_id: int
    timestamp: str | None = None
    version: int = 1
    kraft_controller_epoch: int = -1  # > 0 only while a KRaft controller is active (migration)


def decode_controller(data: bytes | None, path: str) -> ControllerRegistration:
    doc = json_object(data, path)
    with znode(path):
        timestamp = doc.get("timestamp")
        return ControllerRegistration(
            broker_id=as_int(field(doc, "brokerid", ""), "brokerid"),
            timestamp=None if timestamp is None else as_str(timestamp, "timestamp"),
            version=doc["version"] if type(doc.get("version")) is int else 1,
            kraft_controller_epoch=as_int(doc.get("kraftControllerEpoch", -1), "kraftControllerEpoch"),
        )


def encode_controller(reg: ControllerRegistration) -> bytes:
    doc: dict[str, object] = {"version": reg.version, "brokerid": reg.broker_id, "timestamp": reg.timestamp or "0"}
    if reg.version >= 2:
        doc["kraftControllerEpoch"] = reg.kraft_controller_epoch
    return dumps_compact(doc)


def decode_controller_epoch(data: bytes | None, path: str) -> int:
    """A plain decimal integer, not JSON."""
    text = (data or b"").decode("ascii", errors="replace").strip()
    if not re.fullmatch(r"-?[0-9]{1,10}", text):
        raise ZnodeFormatError(path, f"controller epoch must be a decimal integer, got {text[:40]!r}")
    return int(text)


def encode_controller_epoch(epoch: int) -> bytes:
    return str(int(epoch)).encode("ascii")
