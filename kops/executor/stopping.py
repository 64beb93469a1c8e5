"""Why an execution stops short: `Stop`, raised inside a run, turned into a STOPPED record and exit code 3 by the
run; `Stale`, the cluster no longer as the plan expects (exit 4)."""

from __future__ import annotations

from kops.errors import ExitCode, KopsError


class Stale(KopsError):
    """The cluster no longer matches what the plan (or the batch) expects."""

    exit_code = ExitCode.STALE


class Stop(Exception):
    """Stop the run here (checkpoint, health, stall, cancel): the record says why; `--resume` continues."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
