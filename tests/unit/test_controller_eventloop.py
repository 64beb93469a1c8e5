"""The controller's event loop: one thread, in order; a failing event never stops it; clear drops the queue."""

from __future__ import annotations

import threading

from kops.lab.controller.eventloop import EventLoop


def test_events_run_in_order_and_a_failure_does_not_stop_the_loop() -> None:
    seen: list[int] = []
    failures: list[int] = []
    done = threading.Event()

    def handle(event: int) -> None:
        if event == 2:
            raise RuntimeError("boom")
        seen.append(event)
        if event == 4:
            done.set()

    loop: EventLoop[int] = EventLoop(handle, on_failure=lambda e, _exc: failures.append(e)).start()
    for event in range(5):
        loop.put(event)
    assert done.wait(5)
    loop.stop()
    assert seen == [0, 1, 3, 4] and failures == [2]
    assert loop.stats.processed == 5 and loop.stats.failed == 1


def test_clear_drops_what_is_queued() -> None:
    gate = threading.Event()
    seen: list[int] = []
    loop: EventLoop[int] = EventLoop(lambda e: (gate.wait(5), seen.append(e))).start()
    for event in range(10):
        loop.put(event)
    dropped = loop.clear()  # event 0 may already be running, the rest are dropped
    gate.set()
    loop.put(99)
    loop.stop()
    assert dropped >= 9 and seen[-1] == 99 and len(seen) == 11 - dropped
