"""Cordoning what a drain empties (KIP-1066, Kafka 4.3; docs/design/jbod.md §7).

A broker's dynamic config `cordoned.log.dirs` (a comma-separated list of its log dirs, or `*` for all of them)
keeps new replicas off those dirs: a topic created while a broker is decommissioned, or a dir emptied, would
otherwise land there again. The controller takes the config only where the cluster's *finalized*
metadata.version is 4.3-IV0 or later (a 4.3 broker at an older metadata.version refuses it), so kops reads the
finalized version (DescribeFeatures) rather than the brokers' release.

Pure: which dirs a plan drains (`drained`), the plan's cordons or its warning where the version does not allow
them (`cordoned`), and the value to write over the one found (`merged`). kops/executor/cordons.py writes them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from kops.model.plan import Cordon, Plan

CORDONED_LOG_DIRS = "cordoned.log.dirs"
ALL_DIRS = "*"  # Kafka's spelling of every log dir of the broker
CORDON_VERSION = "4.3-IV0"
CORDON_LEVEL = 30  # metadata.version 4.3-IV0's feature level (Kafka's MetadataVersion.IBP_4_3_IV0)
METADATA_VERSION = "metadata.version"  # the finalized feature DescribeFeatures answers, as `offers()` lists it


def metadata_level(offers: Mapping[str, str]) -> int | None:
    """The cluster's finalized metadata.version feature level, from the port's `offers()`; None where none is
    finalized (ZooKeeper mode, the kops engine) or it is not a number."""
    try:
        return int(offers[METADATA_VERSION])
    except (KeyError, ValueError):
        return None


def can_cordon(level: int | None) -> bool:
    return level is not None and level >= CORDON_LEVEL


def drained(decommission: Iterable[int],
            removed: Mapping[int, Iterable[str]] | None = None) -> dict[int, tuple[str, ...]]:
    """The dirs a plan empties, per broker: every dir (`*`) of a decommissioned broker, and the dirs
    `remove_log_dirs` names (sorted, each once)."""
    found: dict[int, tuple[str, ...]] = {b: (ALL_DIRS,) for b in decommission}
    for broker, dirs in (removed or {}).items():
        if broker not in found:
            found[broker] = tuple(sorted(set(dirs)))
    return {b: dirs for b, dirs in sorted(found.items()) if dirs}


def cordoned(plan: Plan, drains: Mapping[int, tuple[str, ...]], level: int | None) -> Plan:
    """`plan` with its cordons, where the cluster's metadata.version allows them (`level`: its finalized feature
    level, None when not known); elsewhere with a warning per broker that new topics may still land there.
    A plan that moves nothing drains nothing: unchanged."""
    if not drains or not plan.batches:
        return plan
    cordons = tuple(Cordon(b, dirs) for b, dirs in sorted(drains.items()))
    if can_cordon(level):
        return dataclasses.replace(plan, cordons=cordons)
    said = tuple(f"new topics may still land on {_what(c)} while it drains (cordoning needs metadata.version "
                 f"{CORDON_VERSION})" for c in cordons)
    return dataclasses.replace(plan, warnings=(*plan.warnings, *said))


def _what(cordon: Cordon) -> str:
    if cordon.dirs == (ALL_DIRS,):
        return f"broker {cordon.broker}"
    return f"{', '.join(cordon.dirs)} of broker {cordon.broker}"


def merged(found: str | None, dirs: tuple[str, ...]) -> str:
    """The `cordoned.log.dirs` to write: what was found (an operator's cordons stay) with `dirs` added; `*`
    wherever either side says every dir."""
    had = [d.strip() for d in (found or "").split(",") if d.strip()]
    if ALL_DIRS in had or ALL_DIRS in dirs:
        return ALL_DIRS
    return ",".join(had + [d for d in dirs if d not in had])
