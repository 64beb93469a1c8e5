"""What became of each cluster of a fleet run, the exit code the fleet ends with, and the recap's totals.

Statuses, as Ansible's PLAY RECAP counts hosts: `ok` (nothing to change), `changed` (applied), `stopped` (exit 3:
a checkpoint, Ctrl-C, a stall), `failed` (any other error), `skipped` (never started: the fleet stopped first).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kops.errors import ExitCode

OK, CHANGED, STOPPED, FAILED, SKIPPED = "ok", "changed", "stopped", "failed", "skipped"
PENDING, RUNNING = "pending", "running"
STATUSES = (OK, CHANGED, STOPPED, FAILED, SKIPPED)
FINISHED = (OK, CHANGED)


@dataclass(frozen=True)
class ClusterResult:
    """One cluster's end: its status, exit code, one line of reason, and what it did."""

    cluster: str
    status: str
    exit_code: int = ExitCode.OK
    reason: str | None = None
    execution: str | None = None
    moves: int = 0
    bytes: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, object]:
        return {"cluster": self.cluster, "status": self.status, "exit_code": int(self.exit_code),
                "reason": self.reason, "execution": self.execution, "moves": self.moves, "bytes": self.bytes,
                "seconds": round(self.seconds, 3)}


def status_of(exit_code: int, changed: bool) -> str:
    """A finished cluster's status from its exit code."""
    if exit_code == ExitCode.OK:
        return CHANGED if changed else OK
    return STOPPED if exit_code == ExitCode.STOPPED else FAILED


def fleet_exit(results: Sequence[ClusterResult]) -> ExitCode:
    """0 when every cluster ended ok or changed; else the first (in fleet order) that did not: its own code,
    1 for one skipped (it cannot be, unless one before it failed)."""
    for result in results:
        if result.status not in FINISHED:
            return ExitCode(result.exit_code) if result.exit_code else ExitCode.ERROR
    return ExitCode.OK


def plan_exit(changes: Iterable[bool], errors: int, detailed: bool) -> ExitCode:
    """`kops plan` over a fleet: 1 if any cluster failed; with --detailed-exitcode 2 when something changes
    somewhere, else 0."""
    if errors:
        return ExitCode.ERROR
    return ExitCode.CHANGES if detailed and any(changes) else ExitCode.OK


def totals(results: Iterable[ClusterResult]) -> dict[str, int]:
    """Clusters per status, and the moves and bytes of all, for the recap's last line."""
    counted = dict.fromkeys(STATUSES, 0)
    moves = size = 0
    for result in results:
        counted[result.status] = counted.get(result.status, 0) + 1
        moves += result.moves
        size += result.bytes
    return {**counted, "moves": moves, "bytes": size}
