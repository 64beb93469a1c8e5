"""Brokers as a cluster advertises them in `/brokers/ids/<id>`.

One type covers every registration version (v1–v5): fields a version lacks take Kafka's defaults, so the
reader, the planner and the lab brokers share it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class FeatureRange:
    """A supported feature's version range (`features` map of a v5 registration)."""

    min_version: int
    max_version: int


@dataclass(frozen=True)
class Broker:
    """A live broker: identity, placement (rack) and how to reach it."""

    id: int
    host: str | None
    port: int
    endpoints: tuple[str, ...] = ()
    rack: str | None = None
    features: dict[str, FeatureRange] = field(default_factory=dict)
    listener_security_protocol_map: dict[str, str] | None = None
    jmx_port: int = -1
    timestamp: str | None = None
    version: int = 5
    epoch: int | None = None  # czxid of the registration znode: Kafka's broker epoch

    def supports(self, feature: str, version: int = 1) -> bool:
        """True when this broker advertises `feature` at `version` (lab-only capabilities)."""
        found = self.features.get(feature)
        return found is not None and found.min_version <= version <= found.max_version
