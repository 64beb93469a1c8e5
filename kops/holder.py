"""Who holds a cluster's lock, in the same words on both transports: host, user, pid, plan, execution, start.

A holder on this host whose process is gone is a killed kops: its lock lapses shortly (a ZooKeeper session or
a lease expiring), so a newcomer waits for it instead of reporting a live lock.
"""

from __future__ import annotations

import getpass
import os
import socket
from typing import Any

from kops.errors import ExitCode, KopsError


class Locked(KopsError):
    exit_code = ExitCode.LOCKED


class LockLost(KopsError):
    """The lock is gone or another's: another kops may be writing now."""

    exit_code = ExitCode.ERROR

    def __init__(self, why: str, where: str | None = None) -> None:
        super().__init__(f"the cluster lock was lost ({why}); this kops stopped writing to the cluster",
                         where=where,
                         hint="whoever holds the lock now continues the execution with `kops apply --resume` "
                              "(or `kops rollback --resume`); `kops status` shows the holder")


def holder_info(plan: str, execution: str | None, now: float) -> dict[str, Any]:
    return {"host": socket.gethostname(), "user": getpass.getuser(), "pid": os.getpid(), "plan": plan,
            "execution": execution, "started": now}


def describe(holder: dict[str, Any]) -> str:
    return (f"{holder.get('user', '?')}@{holder.get('host', '?')} pid {holder.get('pid', '?')} "
            f"applying {holder.get('plan', '?')} (execution {holder.get('execution') or '?'})")


def dead_local(holder: dict[str, Any]) -> bool:
    """The holder ran on this host and its process is gone."""
    if holder.get("host") != socket.gethostname() or not isinstance(holder.get("pid"), int):
        return False
    try:
        os.kill(holder["pid"], 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
