"""Declared capacity: the inventory's `capacity` variable (a host's or group's, Ansible's precedence), or Cruise
Control's capacity file given with `--capacity FILE`, as one `CapacityDeclaration` (docs/design/capacity.md §5).

```yaml
capacity:
  disk: 2TiB                 # per broker, over all its log dirs
  network_in: 125MiB/s
  network_out: 250MiB/s
  max_replicas: 4000         # a count: no fraction applies
  brokers:
    7: {disk: 4TiB}
  limits: {disk: 0.8, network_in: 0.8, network_out: 0.8}   # the defaults; each in (0, 1]
```

Every figure keeps where it was declared (`declared FILE:LINE`), which the plan shows beside it; every mistake is
a problem at its FILE:LINE, all reported in one pass.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kops.declare import fields
from kops.declare.problems import Problems
from kops.declare.yamlsource import YamlMap
from kops.errors import DocumentError, UsageError
from kops.formats.base import validate
from kops.formats.cruise_control import CapacityDoc, CapacityFileDoc
from kops.jsondoc import ShapeError, parse_json
from kops.model.capacity import DEFAULT_LIMITS, FRACTIONED, CapacityDeclaration, Figure, Resource
from kops.model.desired import SourceLocation

FIGURE_KEYS = ("disk", "network_in", "network_out", "max_replicas")
CAPACITY_KEYS = (*FIGURE_KEYS, "brokers", "limits")
MIB, KIB = 2**20, 2**10  # Cruise Control's MB and KB (HolderUtils: BYTES_IN_MB, BYTES_IN_KB)
Reader = Callable[[Any, str, SourceLocation, Problems], float | None]
NO_CAPACITY = "a broker with no capacity can hold nothing: leave the figure out, or give the broker's capacity"


def _max_replicas(value: Any, what: str, loc: SourceLocation, problems: Problems) -> float | None:
    count = fields.as_int(value, what, loc, problems, minimum=1)
    return None if count is None else float(count)


def _positive(read: Callable[[Any, str, SourceLocation, Problems], int | None]) -> Reader:
    def positive(value: Any, what: str, loc: SourceLocation, problems: Problems) -> float | None:
        number = read(value, what, loc, problems)
        if number is not None and number <= 0:
            problems.error(loc, f"{what} must be positive, got {value!r}", NO_CAPACITY)
            return None
        return None if number is None else float(number)
    return positive


FIGURES: dict[str, tuple[Resource, Reader]] = {
    "disk": ("disk", _positive(fields.as_size)),
    "network_in": ("network_in", _positive(fields.as_rate)),
    "network_out": ("network_out", _positive(fields.as_rate)),
    "max_replicas": ("replicas", _max_replicas),
}


def _where(raw: Any, key: Any, default: SourceLocation) -> SourceLocation:
    """A value's location in the file it was written in (the rendered value has none)."""
    return raw.where(key) if isinstance(raw, YamlMap) else default


def _child(raw: Any, key: Any) -> Any:
    return raw.get(key) if isinstance(raw, dict) else None


def _mapping(value: Any, raw: Any, what: str, loc: SourceLocation, keys: tuple[str, ...] | None,
             problems: Problems) -> dict[Any, Any] | None:
    if not isinstance(value, dict):
        problems.error(loc, f"{what} must be a mapping", f"keys: {', '.join(keys)}" if keys else None)
        return None
    if keys is not None:
        fields.check_keys(value, keys, what, lambda k: raw.key_locations.get(k, loc) if isinstance(raw, YamlMap)
                          else loc, problems)
    return value


def _declared(at: SourceLocation, base: Path | None) -> str:
    """A figure's source: the file relative to `base` (the playbook's folder, as the plan's digest names files),
    so a plan reads the same in any checkout."""
    return f"declared {at.file if base is None else os.path.relpath(at.file, base)}:{at.line}"


def _figures(value: dict[Any, Any], raw: Any, what: str, loc: SourceLocation, problems: Problems,
             base: Path | None) -> dict[Resource, Figure]:
    out: dict[Resource, Figure] = {}
    for key, (resource, read) in FIGURES.items():
        if value.get(key) is None:
            continue
        at = _where(raw, key, loc)
        number = read(value[key], f"{what}.{key}", at, problems)
        if number is not None:
            out[resource] = Figure(number, _declared(at, base))
    return out


def _brokers(value: Any, raw: Any, loc: SourceLocation, problems: Problems,
             base: Path | None) -> dict[int, dict[Resource, Figure]]:
    found = _mapping(value, raw, "capacity.brokers", loc, None, problems)
    out: dict[int, dict[Resource, Figure]] = {}
    for key, body in (found or {}).items():
        at = _where(raw, key, loc)
        broker = fields.as_int(key, "capacity.brokers key (a broker id)", at, problems, minimum=0)
        what = f"capacity.brokers.{key}"
        figures = _mapping(body, _child(raw, key), what, at, FIGURE_KEYS, problems)
        if broker is not None and figures is not None:
            out[broker] = _figures(figures, _child(raw, key), what, at, problems, base)
    return out


def _limits(value: Any, raw: Any, loc: SourceLocation, problems: Problems) -> dict[Resource, float]:
    limits = dict(DEFAULT_LIMITS)
    found = _mapping(value, raw, "capacity.limits", loc, FRACTIONED, problems) or {}
    for key in FRACTIONED:
        if found.get(key) is None:
            continue
        at = _where(raw, key, loc)
        fraction = fields.as_fraction(found[key], f"capacity.limits.{key}", at, problems)
        if fraction == 0:
            problems.error(at, f"capacity.limits.{key} must be more than 0", "a limit is a share of the capacity, "
                                                                              "in (0, 1]")
        elif fraction is not None:
            limits[key] = fraction
    return limits


def read_capacity(value: Any, raw: Any, loc: SourceLocation, problems: Problems,
                  base: Path | None = None) -> CapacityDeclaration | None:
    """The `capacity` variable, rendered (`value`) and as written (`raw`, for locations); None when not set.
    Sources name files relative to `base` where given."""
    if value is None:
        return None
    loc = raw.location if isinstance(raw, YamlMap) else loc
    found = _mapping(value, raw, "capacity", loc, CAPACITY_KEYS, problems)
    if found is None:
        return None
    brokers = _brokers(found["brokers"], _child(raw, "brokers"), _where(raw, "brokers", loc),
                       problems, base) if found.get("brokers") is not None else {}
    limits = _limits(found["limits"], _child(raw, "limits"), _where(raw, "limits", loc),
                     problems) if found.get("limits") is not None else dict(DEFAULT_LIMITS)
    return CapacityDeclaration(_figures(found, raw, "capacity", loc, problems, base), brokers, limits,
                               f"{loc.file}:{loc.line}")


def _cc_figures(capacity: CapacityDoc, source: str) -> dict[Resource, Figure]:
    out: dict[Resource, Figure] = {}
    disk = capacity.DISK
    if disk is not None:
        mib = sum(disk.values()) if isinstance(disk, Mapping) else disk
        out["disk"] = Figure(mib * MIB, source)
    if capacity.NW_IN is not None:
        out["network_in"] = Figure(capacity.NW_IN * KIB, source)
    if capacity.NW_OUT is not None:
        out["network_out"] = Figure(capacity.NW_OUT * KIB, source)
    return out


def load_cruise_control(path: Path, limits: Mapping[Resource, float] | None = None) -> CapacityDeclaration:
    """Cruise Control's capacity file as a declaration; its limits are `limits` (the inventory's
    `capacity.limits`), else 0.8, Cruise Control's default thresholds (the file holds none)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read: {exc.strerror}", where=str(path),
                         hint="pass Cruise Control's capacity file (capacity.json) with --capacity") from None
    try:
        doc = validate(CapacityFileDoc, parse_json(data))
    except ShapeError as exc:
        raise DocumentError(f"not a Cruise Control capacity file: {exc}", where=str(path),
                            hint="see docs/declarations.md, Capacity") from None
    source = f"cruise-control {path}"
    default: dict[Resource, Figure] = {}
    brokers: dict[int, dict[Resource, Figure]] = {}
    for entry in doc.brokerCapacities:
        broker = int(entry.brokerId)
        if broker == -1:
            default = _cc_figures(entry.capacity, source)
        else:
            brokers[broker] = _cc_figures(entry.capacity, source)
    return CapacityDeclaration(default, brokers, dict(limits or DEFAULT_LIMITS), str(path))


def declared_capacity(file: Path | None, declared: CapacityDeclaration | None) -> CapacityDeclaration | None:
    """What applies: `--capacity FILE` replaces the inventory's declaration as a whole (one declared source at a
    time, which the plan names), keeping only its limits, which the file cannot say."""
    if file is None:
        return declared
    return load_cruise_control(file, declared.limits if declared is not None else None)
