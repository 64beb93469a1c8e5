"""Simulated time shared by every process of a lab: real monotonic time since the lab's origin, scaled.

`CLOCK_MONOTONIC` is one clock for the whole machine, so brokers started at different moments agree on
simulated time when they are given the same origin and scale (`kops lab up --time-scale X`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class SimClock:
    scale: float = 1.0
    origin: float = 0.0  # time.monotonic() at the lab's simulated time zero

    def now(self) -> float:
        """Simulated seconds since the lab's origin."""
        return (time.monotonic() - self.origin) * self.scale

    @property
    def stretch(self) -> float:
        """Wall seconds per second of the broker's rhythm (fetch waits, fetch rounds, ticks). A clock slower than
        wall time stretches them with it, so a slowed lab is the same lab in slow motion and costs the machine
        that much less (how a rehearsal fits a large clone on a small machine); a faster clock keeps them, as a
        broker cannot poll faster than its machine lets it."""
        return max(1.0, 1.0 / self.scale)

    def sleep(self, simulated: float) -> None:
        time.sleep(max(0.0, simulated / self.scale))
