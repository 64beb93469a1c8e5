"""tests/labtools.py's wait beside a subprocess: what a lab test shows when the kops apply it waits on goes wrong."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.labtools import wait_while_running


def python(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_check_holding_returns_its_value_and_leaves_the_process_running() -> None:
    process = python("import time; time.sleep(30)")
    try:
        assert wait_while_running(process, lambda: "seen", timeout=5, what="it") == "seen"
        assert process.poll() is None
    finally:
        process.kill()
        process.communicate()


def test_a_process_that_ends_first_fails_with_its_exit_code_and_output() -> None:
    process = python("import sys; print('refused: drift on orders-0'); sys.exit(2)")
    with pytest.raises(AssertionError, match=r"(?s)ended \(exit 2\) before the first batch.*drift on orders-0"):
        wait_while_running(process, lambda: False, timeout=30, what="the first batch")


def test_a_timeout_stops_the_process_and_shows_what_it_printed() -> None:
    process = python("import time; print('waiting for the lock', flush=True); time.sleep(30)")
    with pytest.raises(AssertionError, match=r"(?s)timed out.*waiting for the lock"):
        wait_while_running(process, lambda: False, timeout=1, what="the first batch")
    assert process.returncode is not None  # killed, not left beside the next test


def test_a_failing_check_stops_the_process_too() -> None:
    process = python("import time; time.sleep(30)")

    def check() -> bool:
        raise ConnectionError("no broker answered")

    with pytest.raises(AssertionError, match="no broker answered"):
        wait_while_running(process, check, timeout=5, what="a move in flight")
    assert process.returncode is not None
