"""`/brokers/ids/<id>`: broker registrations v1–v5 (spec §1.3)."""

from __future__ import annotations

import re
from typing import Any

from kops.errors import ZnodeFormatError
from kops.jsondoc import (
    ShapeError,
    as_int,
    as_object,
    as_str,
    as_str_list,
    as_str_map,
    dumps_compact,
    field,
)
from kops.model.brokers import Broker, FeatureRange
from kops.zk_layout.codecs.decoding import json_object, znode

SECURITY_PROTOCOLS = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})
# Kafka's EndPoint.uriParseExp: listener name, optional [IPv6] host, port.
_ENDPOINT = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")


def parse_endpoint(text: str, at: str) -> tuple[str, str, int]:
    """Split `LISTENER://host:port` into (listener, host, port) as Kafka does."""
    match = _ENDPOINT.match(text)
    if not match:
        raise ShapeError(f"{at} is not an endpoint of the form LISTENER://host:port: {text!r}")
    return match.group(1), match.group(2), int(match.group(3))


def decode_broker(broker_id: int, data: bytes | None, path: str, epoch: int | None = None) -> Broker:
    """Decode a registration. `epoch` is the znode's czxid (Kafka's broker epoch), when the caller has it."""
    doc = json_object(data, path)
    with znode(path):
        version = as_int(field(doc, "version", ""), "version")
        if version < 1:
            raise ZnodeFormatError(path, f"unsupported broker registration version {version}")
        host_raw = doc.get("host")
        host = None if host_raw is None else as_str(host_raw, "host")
        port = as_int(doc.get("port", -1), "port")
        jmx_port = as_int(doc.get("jmx_port", -1), "jmx_port")
        timestamp = None if doc.get("timestamp") is None else as_str(doc["timestamp"], "timestamp")
        protocol_map = None
        if version == 1:
            if host is None:
                raise ZnodeFormatError(path, "a v1 registration needs a host")
            endpoints: tuple[str, ...] = (f"PLAINTEXT://{host}:{port}",)
        else:
            endpoints = as_str_list(field(doc, "endpoints", ""), "endpoints")
            if doc.get("listener_security_protocol_map") is not None:
                protocol_map = as_str_map(doc["listener_security_protocol_map"], "listener_security_protocol_map")
            for i, text in enumerate(endpoints):
                listener, _, _ = parse_endpoint(text, f"endpoints[{i}]")
                known = protocol_map if protocol_map is not None else {p: p for p in SECURITY_PROTOCOLS}
                if listener not in known:
                    raise ZnodeFormatError(
                        path, f"endpoints[{i}]: listener {listener!r} has no security protocol in the map"
                    )
        rack = None if doc.get("rack") is None else as_str(doc["rack"], "rack")
        features = _decode_features(doc.get("features")) if version >= 5 else {}
    return Broker(
        id=broker_id,
        host=host,
        port=port,
        endpoints=endpoints,
        rack=rack,
        features=features,
        listener_security_protocol_map=protocol_map,
        jmx_port=jmx_port,
        timestamp=timestamp,
        version=version,
        epoch=epoch,
    )


def _decode_features(raw: Any) -> dict[str, FeatureRange]:
    if raw is None:
        return {}
    features = {}
    for name, value in as_object(raw, "features").items():
        entry = as_object(value, f"features.{name}")
        features[name] = FeatureRange(
            as_int(field(entry, "min_version", f"features.{name}"), f"features.{name}.min_version"),
            as_int(field(entry, "max_version", f"features.{name}"), f"features.{name}.max_version"),
        )
    return features


def encode_broker(broker: Broker, version: int | None = None) -> bytes:
    """Encode as Kafka's `BrokerIdZNode.encode` for the given registration version (default: the broker's)."""
    version = broker.version if version is None else version
    if not 1 <= version <= 5:
        raise ValueError(f"broker registration version must be 1..5, not {version}")
    doc: dict[str, Any] = {}
    if version >= 5:
        doc["features"] = {
            name: {"min_version": f.min_version, "max_version": f.max_version}
            for name, f in sorted(broker.features.items())
        }
    if version >= 4:
        protocols = broker.listener_security_protocol_map
        if protocols is None:
            protocols = {parse_endpoint(e, "endpoint")[0]: parse_endpoint(e, "endpoint")[0] for e in broker.endpoints}
        doc["listener_security_protocol_map"] = dict(protocols)
    if version >= 2:
        doc["endpoints"] = list(broker.endpoints)
    if version >= 3 and broker.rack is not None:
        doc["rack"] = broker.rack
    doc["jmx_port"] = broker.jmx_port
    doc["port"] = broker.port
    doc["host"] = broker.host
    doc["version"] = version
    doc["timestamp"] = broker.timestamp if broker.timestamp is not None else "0"
    return dumps_compact(doc)
