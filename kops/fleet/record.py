"""The fleet record, `DIR/fleet.json` (kops-fleet/1): which plan each cluster ran and which execution it is, so
`kops apply DIR --resume` continues the fleet and `kops rollback DIR` knows what to undo, in reverse.

The cluster's own journal stays the authority on what was done; this record only names its execution. Written
after each cluster starts and ends (the CLI writes it atomically); read back strictly, one line per mistake.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from kops.errors import DocumentError
from kops.fleet.results import FINISHED, PENDING, STATUSES, ClusterResult

FORMAT = "kops-fleet/1"
NAME = "fleet.json"
CANCEL = "fleet.cancel"  # `kops cancel DIR` leaves it: the running fleet starts no further cluster
PLAN_SUFFIX = ".plan.json"
STATES = (PENDING, "running", *STATUSES)


@dataclass(frozen=True)
class Entry:
    """One cluster of the fleet: its plan file (relative to the fleet's folder), the plan's digest, and how its
    execution went."""

    cluster: str
    plan: str
    digest: str
    status: str = PENDING
    execution: str | None = None
    exit_code: int = 0
    reason: str | None = None
    rollback: str | None = None  # status of the fleet rollback on this cluster, once one ran


@dataclass(frozen=True)
class FleetRecord:
    kind: str  # apply
    serial: int
    max_fail_percentage: float
    entries: tuple[Entry, ...] = field(default_factory=tuple)

    def entry(self, cluster: str) -> Entry:
        return next(e for e in self.entries if e.cluster == cluster)

    def with_entry(self, entry: Entry) -> FleetRecord:
        return replace(self, entries=tuple(entry if e.cluster == entry.cluster else e for e in self.entries))

    def ended(self, result: ClusterResult) -> FleetRecord:
        """The record once `result` is known; the execution named before stays when the result has none."""
        old = self.entry(result.cluster)
        return self.with_entry(replace(old, status=result.status, execution=result.execution or old.execution,
                                       exit_code=int(result.exit_code), reason=result.reason))


def resume_mode(entry: Entry) -> str | None:
    """What `--resume` does with a cluster: None (already ok or changed), "resume" (its execution did not
    finish), "start" (it never started an execution)."""
    if entry.status in FINISHED:
        return None
    return "resume" if entry.execution else "start"


def started(record: FleetRecord) -> list[Entry]:
    """The clusters a fleet rollback undoes, last started first: every one that ran an execution."""
    return [e for e in reversed(record.entries) if e.execution]


def dumps(record: FleetRecord) -> bytes:
    document = {"format": FORMAT, "kind": record.kind, "serial": record.serial,
                "max_fail_percentage": record.max_fail_percentage,
                "clusters": [{"cluster": e.cluster, "plan": e.plan, "digest": e.digest, "status": e.status,
                              "execution": e.execution, "exit_code": e.exit_code, "reason": e.reason,
                              "rollback": e.rollback} for e in record.entries]}
    return (json.dumps(document, indent=2) + "\n").encode()


def loads(data: bytes, where: str) -> FleetRecord:
    """The record, or one line naming what is wrong with it."""
    try:
        document = json.loads(data)
    except ValueError as exc:
        raise DocumentError(f"not JSON: {exc}", where=where) from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise DocumentError(f"not a {FORMAT} fleet record", where=where)
    try:
        entries = tuple(_entry(item) for item in document["clusters"])
        return FleetRecord(str(document["kind"]), int(document["serial"]), float(document["max_fail_percentage"]),
                           entries)
    except (KeyError, TypeError, ValueError) as exc:
        raise DocumentError(f"malformed fleet record ({exc})", where=where) from None


def _entry(item: Any) -> Entry:
    status = item["status"]
    if status not in STATES:
        raise ValueError(f"status {status!r}")
    return Entry(str(item["cluster"]), str(item["plan"]), str(item["digest"]), status, item.get("execution"),
                 int(item.get("exit_code", 0)), item.get("reason"), item.get("rollback"))


def cluster_of(plan_name: str) -> str:
    """`prod-eu.plan.json` -> `prod-eu`."""
    return plan_name[: -len(PLAN_SUFFIX)] if plan_name.endswith(PLAN_SUFFIX) else plan_name.rsplit(".", 1)[0]
