"""Byte rates in simulated time: a token bucket refilled at `rate` bytes per simulated second.

The bucket holds at most `burst_seconds` of traffic (a few fetch rounds), so a quota is met over any window
longer than that, like Kafka's sampled quota windows; a rate that changes starts from an empty bucket. `None` means
unlimited (Kafka's `Long.MAX_VALUE` default).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass
class RateLimiter:
    rate: float | None = None
    burst_seconds: float = 1.0
    _tokens: float = 0.0
    _at: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def set_rate(self, rate: float | None) -> None:
        """A new rate starts with an empty bucket: a throttle applied after an idle spell allows no burst."""
        with self._lock:
            if rate != self.rate:
                self._tokens, self._at = 0.0, None
            self.rate = rate

    def take(self, wanted: int, now: float) -> int:
        """Grant up to `wanted` bytes now."""
        if wanted <= 0:
            return 0
        with self._lock:
            if self.rate is None:
                return wanted
            if self._at is not None:
                self._tokens = min(self.rate * self.burst_seconds, self._tokens + (now - self._at) * self.rate)
            self._at = now
            granted = int(min(wanted, self._tokens))
            self._tokens -= granted
            return granted

    def give_back(self, unused: int) -> None:
        if unused > 0 and self.rate is not None:
            with self._lock:
                self._tokens += unused
