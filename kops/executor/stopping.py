"""Why an execution stops short: raised inside a run, turned into a STOPPED record and exit code 3 by the run."""

from __future__ import annotations


class Stop(Exception):
    """Stop the run here (checkpoint, health, stall, cancel): the record says why; `--resume` continues."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
