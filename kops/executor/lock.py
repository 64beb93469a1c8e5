"""The cluster lock: one kops execution at a time per cluster, visible to every operator and cron host.

An ephemeral `/kops/lock` naming the holder (host, user, pid, plan, execution, start time). Ephemeral, so a
crashed holder's lock vanishes with its ZooKeeper session; a holder on this host whose process is gone is
waited for (up to the session timeout) instead of reported as a live lock.
"""

from __future__ import annotations

import getpass
import json
import os
import socket
from collections.abc import Callable
from typing import Any

from kops.errors import ExitCode, KopsError
from kops.kafka import paths
from kops.kafka.client import NodeExists, NodeMissing, ZkClient


class Locked(KopsError):
    exit_code = ExitCode.LOCKED


class LockLost(KopsError):
    """The lock's ephemeral znode is gone or another session's: another kops may be writing now."""

    exit_code = ExitCode.ERROR

    def __init__(self, why: str) -> None:
        super().__init__(f"the cluster lock was lost ({why}); this kops stopped writing to the cluster",
                         where=paths.KOPS_LOCK,
                         hint="whoever holds the lock now continues the execution with `kops apply --resume` "
                              "(or `kops rollback --resume`); `kops status` shows the holder")


def holder_info(plan: str, execution: str | None, now: float) -> dict[str, Any]:
    return {"host": socket.gethostname(), "user": getpass.getuser(), "pid": os.getpid(), "plan": plan,
            "execution": execution, "started": now}


def read_holder(client: ZkClient) -> dict[str, Any] | None:
    node = client.get(paths.KOPS_LOCK)
    if node is None:
        return None
    try:
        return json.loads(node.data or b"{}")
    except ValueError:
        return {"unreadable": True}


def describe(holder: dict[str, Any]) -> str:
    return (f"{holder.get('user', '?')}@{holder.get('host', '?')} pid {holder.get('pid', '?')} "
            f"applying {holder.get('plan', '?')} (execution {holder.get('execution') or '?'})")


def _dead_local(holder: dict[str, Any]) -> bool:
    if holder.get("host") != socket.gethostname() or not isinstance(holder.get("pid"), int):
        return False
    try:
        os.kill(holder["pid"], 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


class ClusterLock:
    def __init__(self, client: ZkClient, holder: dict[str, Any], wait_dead: float,
                 sleep: Callable[[float], None], monotonic: Callable[[], float]) -> None:
        self.client = client
        self.holder = holder
        self.wait_dead = wait_dead
        self.sleep = sleep
        self.monotonic = monotonic
        self.held = False
        self.session: int | None = None
        self.lost: str | None = None  # why, once the ZooKeeper session that owns the lock is gone
        self._listening = False

    def acquire(self) -> None:
        self.client.ensure_path(paths.KOPS_ROOT)
        deadline = self.monotonic() + self.wait_dead
        while True:
            try:
                self.client.create(paths.KOPS_LOCK, json.dumps(self.holder, sort_keys=True).encode(), ephemeral=True)
                self.held, self.session, self.lost = True, self.client.session_id, None
                if not self._listening:
                    self.client.add_state_listener(self._on_state)
                    self._listening = True
                return
            except NodeExists:
                holder = read_holder(self.client)
                if holder is None:
                    continue
                if _dead_local(holder) and self.monotonic() < deadline:
                    self.sleep(0.2)  # a killed kops on this host: its session expires shortly
                    continue
                raise Locked(f"the cluster is locked by {describe(holder)}", where=paths.KOPS_LOCK,
                             hint="wait for it to finish, or stop it with `kops cancel`") from None

    def _on_state(self, state: str) -> None:
        """Called on kazoo's thread: a lost session took the ephemeral lock with it."""
        if state == "lost" and self.held:
            self.lost = "the ZooKeeper session expired: a long pause or a network cut"

    def ensure_held(self) -> None:
        """Before every write: the lock znode still exists and belongs to this client's session."""
        if not self.held:
            return
        if self.lost is None:
            stat = self.client.exists(paths.KOPS_LOCK)
            if stat is None:
                self.lost = "its znode is gone"
            elif stat.ephemeral_owner != self.session:
                self.lost = "another session holds it now"
        if self.lost is not None:
            raise LockLost(self.lost)

    def update(self, **fields: Any) -> None:
        self.holder.update(fields)
        if self.held:
            self.ensure_held()
            self.client.set(paths.KOPS_LOCK, json.dumps(self.holder, sort_keys=True).encode())

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        try:
            stat = self.client.exists(paths.KOPS_LOCK)
            if stat is not None and stat.ephemeral_owner == self.client.session_id:
                self.client.delete(paths.KOPS_LOCK)
        except NodeMissing:
            pass


class FencedClient:
    """The executor's ZooKeeper client while it holds the lock: every write first checks that the lock is still
    this session's (a fencing check; the window between the check and the write is one round trip)."""

    WRITES = frozenset({"create", "set", "delete", "transaction", "ensure_path"})

    def __init__(self, client: ZkClient, lock: ClusterLock) -> None:
        self._client = client
        self._lock = lock

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if name not in self.WRITES:
            return attr

        def fenced(*args: Any, **kwargs: Any) -> Any:
            self._lock.ensure_held()
            return attr(*args, **kwargs)

        return fenced
