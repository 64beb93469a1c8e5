"""What a rehearsal watches beside the executor: when each move completed, and how many partitions were
under-replicated, read through its own connection to the clone (the cluster port) every `interval` seconds.

The executor's own events give batch boundaries and stalls; the observer adds per-partition completion times
(the slowest partition of each batch) and the under-replicated partition-seconds a batch costs.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from kops.cluster.port import Cluster
from kops.errors import KopsError
from kops.executor.progress import is_done
from kops.model.partitions import TopicPartition
from kops.model.plan import Move


@dataclass
class Observations:
    done_at: dict[TopicPartition, float] = field(default_factory=dict)  # monotonic time first seen done
    under_replicated: list[tuple[float, int]] = field(default_factory=list)  # (monotonic time, partitions)

    def urp_seconds(self, start: float, end: float) -> float:
        """Under-replicated partition-seconds between `start` and `end` (each sample holds until the next)."""
        total = 0.0
        samples = self.under_replicated
        for (t, count), (t_next, _c) in zip(samples, samples[1:] + [(end, 0)]):
            lo, hi = max(t, start), min(t_next, end)
            if hi > lo:
                total += count * (hi - lo)
        return total


class Observer:
    """A daemon thread reading the clone until `stop()`: the partitions of the moves it is told to `watch` (the
    batch in flight; reading whole topics, let alone the cluster, made its clock coarse on a large clone)."""

    def __init__(self, cluster: Cluster, moves: list[Move], interval: float = 0.2) -> None:
        self.cluster = cluster
        self.moves = moves
        self._lock = threading.Lock()
        self.interval = interval
        self.seen = Observations()
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rehearsal-observer", daemon=True)
        self.error: str | None = None

    def start(self) -> Observer:
        self._thread.start()
        return self

    def stop(self) -> Observations:
        self._halt.set()
        self._thread.join(timeout=30)
        return self.seen

    def watch(self, moves: list[Move]) -> None:
        with self._lock:
            self.moves = moves

    def _run(self) -> None:
        while not self._halt.is_set():
            try:
                self._look()
            except KopsError as exc:  # a broker restarting, a leader moving: the next read counts
                self.error = exc.one_line()
            self._halt.wait(self.interval)

    def _look(self) -> None:
        with self._lock:
            moves = self.moves
        if not moves:
            return
        snapshot = self.cluster.snapshot(only_partitions=[m.tp for m in moves])
        now = time.monotonic()
        urp = len(snapshot.under_replicated())
        self.seen.under_replicated.append((now, urp))
        requested = {(m.topic, m.partition) for m in snapshot.requested_moves}
        for move in moves:
            if move.tp not in self.seen.done_at and move.adding and is_done(snapshot, move, requested):
                self.seen.done_at[move.tp] = now
