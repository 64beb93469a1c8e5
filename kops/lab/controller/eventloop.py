"""One thread, one queue (seed 002): every controller event is processed here, in order, one at a time.

Watches and RPC handlers only `put` events; `process` runs on the loop thread and may do I/O. An exception in
`process` is logged and the loop goes on with the next event. `clear` drops queued events (session loss:
they were decided against a session that is gone). Figures (`stats`) feed bench/failover.py.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

E = TypeVar("E")
_STOP = object()


@dataclass
class LoopStats:
    processed: int = 0
    failed: int = 0
    busy_seconds: float = 0.0
    max_queue: int = 0


class EventLoop(Generic[E]):
    def __init__(self, process: Callable[[E], None], name: str = "controller-event-thread",
                 on_failure: Callable[[E, Exception], None] | None = None) -> None:
        self._process = process
        self._on_failure = on_failure
        self._queue: queue.Queue[object] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.stats = LoopStats()

    def start(self) -> EventLoop[E]:
        self._thread.start()
        return self

    def put(self, event: E) -> None:
        self._queue.put(event)
        size = self._queue.qsize()
        if size > self.stats.max_queue:
            self.stats.max_queue = size

    def clear(self) -> int:
        """Drop every queued event; how many were dropped."""
        dropped = 0
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return dropped
            if item is _STOP:
                self._queue.put(_STOP)
                return dropped
            dropped += 1

    def stop(self, timeout: float = 5.0) -> None:
        self._queue.put(_STOP)
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            event = self._queue.get()
            if event is _STOP:
                return
            started = time.perf_counter()
            try:
                self._process(event)  # type: ignore[arg-type]  # anything but _STOP is an Event
            except Exception as exc:  # noqa: BLE001 - one bad event must not stop the controller
                self.stats.failed += 1
                log.exception("controller event %s failed", type(event).__name__)
                if self._on_failure is not None:
                    try:
                        self._on_failure(event, exc)  # type: ignore[arg-type]  # as above
                    except Exception:  # noqa: BLE001 - nor may its failure handler's
                        log.exception("failure handler for %s failed", type(event).__name__)
            finally:
                self.stats.processed += 1
                self.stats.busy_seconds += time.perf_counter() - started
