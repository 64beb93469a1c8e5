"""A replica's log without its bytes: log start offset, log end offset and high watermark, in bytes.

Retention deletes from the start as Kafka does by segment: `retention.bytes` caps the size, `retention.ms`
drops what was appended before the cutoff. Append times are kept as checkpoints (one per `checkpoint_every`
simulated seconds), which plays the part of segment boundaries.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass
class SimulatedLog:
    start: int = 0
    end: int = 0
    hw: int = 0
    checkpoint_every: float = 60.0
    checkpoints: deque[tuple[float, int]] = field(default_factory=deque)  # (simulated time, end offset then)

    @property
    def size(self) -> int:
        return self.end - self.start

    def append(self, count: int, now: float) -> None:
        if count <= 0:
            return
        self.end += count
        if not self.checkpoints or now - self.checkpoints[-1][0] >= self.checkpoint_every:
            self.checkpoints.append((now, self.end))
        else:
            self.checkpoints[-1] = (self.checkpoints[-1][0], self.end)

    def reset_to(self, start: int) -> None:
        """An empty log starting at `start` (a new follower of a leader whose log no longer starts at 0)."""
        self.start = self.end = self.hw = start
        self.checkpoints.clear()

    def advance_start(self, offset: int) -> None:
        self.start = min(max(self.start, offset), self.end)
        while self.checkpoints and self.checkpoints[0][1] <= self.start:
            self.checkpoints.popleft()

    def apply_retention(self, now: float, retention_ms: int, retention_bytes: int) -> int:
        """Delete what retention allows; the number of bytes deleted."""
        before = self.start
        if retention_bytes >= 0 and self.size > retention_bytes:
            self.advance_start(self.end - retention_bytes)
        if retention_ms >= 0:
            cutoff = now - retention_ms / 1000.0
            expired = [offset for t, offset in self.checkpoints if t < cutoff]
            if expired:
                self.advance_start(min(expired[-1], self.hw))
        return self.start - before
