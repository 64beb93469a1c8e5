"""`/cluster/id`, `/feature` (v1–v2) and `/migration` (spec §1.15, §1.17, §1.18)."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field

from kops.errors import ZnodeFormatError
from kops.jsondoc import INT64, as_int, as_object, as_str, dumps_compact, field
from kops.zk_layout.codecs.decoding import json_object, znode


def decode_cluster_id(data: bytes | None, path: str) -> str:
    doc = json_object(data, path)
    with znode(path):
        return as_str(field(doc, "id", ""), "id")


def encode_cluster_id(cluster_id: str) -> bytes:
    return dumps_compact({"version": "1", "id": cluster_id})


@dataclass(frozen=True)
class FinalizedFeature:
    max_version_level: int
    min_version_level: int | None = None  # v1 only


@dataclass(frozen=True)
class FeatureZNode:
    version: int
    enabled: bool
    features: dict[str, FinalizedFeature] = dc_field(default_factory=dict)


def decode_feature(data: bytes | None, path: str) -> FeatureZNode:
    doc = json_object(data, path)
    with znode(path):
        version = as_int(field(doc, "version", ""), "version")
        if version not in (1, 2):
            raise ZnodeFormatError(path, f"unsupported /feature version {version}")
        status = as_int(field(doc, "status", ""), "status")
        if status not in (0, 1):
            raise ZnodeFormatError(path, f"status must be 0 (disabled) or 1 (enabled), got {status}")
        features = {}
        for name, raw in as_object(doc.get("features") or {}, "features").items():
            entry = as_object(raw, f"features.{name}")
            low = entry.get("min_version_level")
            features[name] = FinalizedFeature(
                max_version_level=as_int(field(entry, "max_version_level", f"features.{name}"), f"features.{name}"),
                min_version_level=None if low is None else as_int(low, f"features.{name}.min_version_level"),
            )
        return FeatureZNode(version=version, enabled=status == 1, features=features)


def encode_feature(feature: FeatureZNode) -> bytes:
    features = {}
    for name, f in sorted(feature.features.items()):
        entry: dict[str, int] = {}
        if feature.version == 1:
            entry["min_version_level"] = f.min_version_level if f.min_version_level is not None else 1
        entry["max_version_level"] = f.max_version_level
        features[name] = entry
    return dumps_compact({"features": features, "version": feature.version, "status": 1 if feature.enabled else 0})


@dataclass(frozen=True)
class MigrationState:
    kraft_controller_id: int
    kraft_controller_epoch: int
    kraft_metadata_offset: int
    kraft_metadata_epoch: int
    version: int = 0


def decode_migration(data: bytes | None, path: str) -> MigrationState:
    doc = json_object(data, path)
    with znode(path):
        return MigrationState(
            kraft_controller_id=as_int(field(doc, "kraft_controller_id", ""), "kraft_controller_id"),
            kraft_controller_epoch=as_int(field(doc, "kraft_controller_epoch", ""), "kraft_controller_epoch"),
            kraft_metadata_offset=as_int(
                field(doc, "kraft_metadata_offset", ""), "kraft_metadata_offset", bounds=INT64
            ),
            kraft_metadata_epoch=as_int(field(doc, "kraft_metadata_epoch", ""), "kraft_metadata_epoch"),
            version=doc["version"] if type(doc.get("version")) is int else 0,
        )


def encode_migration(state: MigrationState) -> bytes:
    return dumps_compact(
        {
            "version": state.version,
            "kraft_controller_id": state.kraft_controller_id,
            "kraft_controller_epoch": state.kraft_controller_epoch,
            "kraft_metadata_offset": state.kraft_metadata_offset,
            "kraft_metadata_epoch": state.kraft_metadata_epoch,
        }
    )
