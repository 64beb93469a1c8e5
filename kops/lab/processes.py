"""Child processes of the lab that never outlive what started them by accident.

Managed children ask the kernel to SIGKILL them when their parent dies (PR_SET_PDEATHSIG), so a crashed test
run leaves nothing behind; detached children (`kops lab up`) live in their own session and are found again by
the pid files in the lab folder, checked against /proc so a recycled pid is never signalled.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from pathlib import Path


def die_with_parent() -> None:
    """In the child before exec: ask the kernel to SIGKILL us when the parent dies (Linux)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet reaped by its parent) is not alive
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return True


def cmdline_contains(pid: int, marker: bytes) -> bool:
    try:
        return marker in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc: trust the pid file


def signal_and_wait(pid: int, sig: int = signal.SIGTERM, timeout: float = 10.0) -> bool:
    """Send `sig`, wait up to `timeout` for the process to go, SIGKILL it if it did not. True if it was alive."""
    if not pid_alive(pid):
        return False
    try:
        os.kill(pid, sig)
        deadline = time.monotonic() + timeout
        while pid_alive(pid) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.05)
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
            while pid_alive(pid):
                _reap(pid)
                time.sleep(0.02)
    except ProcessLookupError:
        pass
    _reap(pid)
    return True


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def is_paused(pid: int | None) -> bool:
    """Stopped by SIGSTOP (state T in /proc): alive, answering nothing."""
    if pid is None:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] == "T"
    except (OSError, IndexError):
        return False
