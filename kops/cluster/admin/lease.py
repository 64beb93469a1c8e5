"""The cluster lock as a lease in the `__kops` log (no ZooKeeper ephemeral node to lean on).

Every contender appends a claim (`lock/<claim id>`); the holder heartbeats by appending to its claim. Reading
the log in order, a claim is live while its last heartbeat is at most its lease old, and dead for good once a
gap between two of its heartbeats exceeded the lease (each heartbeat carries the time of the previous one, so
this survives compaction); released claims are tombstoned. The lock belongs to the live claim that came first
in the log. Times are the brokers' (LogAppendTime), never a contender's clock. So a killed holder frees the
cluster a lease after its last heartbeat, and a holder paused past its lease finds on waking that its claim is
dead: it stops instead of writing.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kops.cluster.admin.kops_log import TOPIC, Entry, KopsLog
from kops.errors import KopsError
from kops.holder import Locked, LockLost, dead_local, describe

PREFIX = "lock/"


@dataclass
class Claim:
    id: str
    first_offset: int
    last_ms: int
    lease_ms: int
    holder: dict[str, Any] = field(default_factory=dict)
    dead: bool = False
    released: bool = False

    def live(self, now_ms: int) -> bool:
        return not self.dead and not self.released and now_ms - self.last_ms <= self.lease_ms


class Claims:
    """Every claim seen in the log, folded in log order."""

    def __init__(self) -> None:
        self.by_id: dict[str, Claim] = {}
        self.newest_ms = 0

    def fold(self, entry: Entry) -> None:
        self.newest_ms = max(self.newest_ms, entry.timestamp_ms)
        if not entry.key.startswith(PREFIX):
            return
        claim_id = entry.key[len(PREFIX):]
        known = self.by_id.get(claim_id)
        if entry.value is None:
            if known is not None:
                known.released = True
            return
        try:
            beat = json.loads(entry.value)
        except ValueError:
            return
        if known is None:
            claimed = beat.get("claimed")  # where the claim began (offset 0 is a claim too)
            known = Claim(claim_id, entry.offset if claimed is None else int(claimed), entry.timestamp_ms,
                          int(beat.get("lease_ms", 0)), dict(beat.get("holder") or {}))
            self.by_id[claim_id] = known
        previous = beat.get("previous_ms")
        if (previous is not None and entry.timestamp_ms - int(previous) > known.lease_ms) or \
                entry.timestamp_ms - known.last_ms > known.lease_ms:
            known.dead = True
        known.last_ms, known.holder = entry.timestamp_ms, dict(beat.get("holder") or known.holder)
        known.released = known.released or bool(beat.get("released"))

    def winner(self, now_ms: int) -> Claim | None:
        live = [c for c in self.by_id.values() if c.live(now_ms)]
        return min(live, key=lambda c: c.first_offset) if live else None


class LeaseLock:
    def __init__(self, log: KopsLog, claims: Claims, holder: dict[str, Any], lease: float, wait_dead: float,
                 sleep: Callable[[float], None], monotonic: Callable[[], float]) -> None:
        self.log = log
        self.claims = claims
        self.holder = holder
        self.lease_ms = int(lease * 1000)
        self.wait_dead = max(wait_dead, lease + 5)
        self.sleep = sleep
        self.monotonic = monotonic
        self.claim = uuid.uuid4().hex[:16]
        self.held = False
        self.lost: str | None = None
        self._first_offset: int | None = None
        self._last_ms: int | None = None
        self._last_ok = 0.0
        self._beating = threading.Event()
        self._thread: threading.Thread | None = None
        self._write = threading.Lock()

    def acquire(self) -> None:
        started = self.monotonic()
        self._beat()
        while True:
            self.log.refresh()
            winner = self.claims.winner(self._last_ms or 0)
            if winner is not None and winner.id == self.claim:
                self.held, self.lost = True, None
                self._beating.set()
                self._thread = threading.Thread(target=self._heartbeats, name="kops-lease", daemon=True)
                self._thread.start()
                return
            holder = winner.holder if winner is not None else {}
            # a kops on this host that is gone (killed, or its release did not reach the cluster): its lease runs
            # out within its own lease, which may be longer than ours (--session-timeout)
            patience = max(self.wait_dead, winner.lease_ms / 1000 + 5) if winner is not None else self.wait_dead
            if winner is None or (dead_local(holder) and self.monotonic() - started < patience):
                self.sleep(0.5)
                self._beat()
                continue
            self._tombstone()
            raise Locked(f"the cluster is locked by {describe(holder)}", where=TOPIC,
                         hint="wait for it to finish, or stop it with `kops cancel`")

    def _beat(self, **extra: Any) -> None:
        value = {"holder": self.holder, "lease_ms": self.lease_ms, "claimed": self._first_offset,
                 "previous_ms": self._last_ms, **extra}
        with self._write:
            entry = self.log.append(PREFIX + self.claim, json.dumps(value, sort_keys=True).encode())
        if self._first_offset is None:
            self._first_offset = entry.offset
        if self._last_ms is not None and entry.timestamp_ms - self._last_ms > self.lease_ms and self.held:
            self.lost = (f"{(entry.timestamp_ms - self._last_ms) / 1000:.0f} s passed between two heartbeats, "
                         f"more than the {self.lease_ms / 1000:.0f} s lease: a long pause or a network cut")
        self._last_ms = entry.timestamp_ms
        self._last_ok = self.monotonic()

    def _heartbeats(self) -> None:
        while self._beating.is_set() and self.lost is None:
            self.sleep(self.lease_ms / 4000)
            if not self._beating.is_set():
                return
            self._check_age()
            if self.lost is not None:
                return
            try:
                self._beat()
            except Exception:  # noqa: BLE001 - a thread has no caller to raise to: any failed beat is retried
                continue  # (a run that is stopping closes the clients under it); the age check ends a lost lease

    def _check_age(self) -> None:
        silent = self.monotonic() - self._last_ok
        if self.held and self.lost is None and silent * 1000 > self.lease_ms * 0.9:
            self.lost = (f"no heartbeat reached the cluster for {silent:.0f} s (the lease is "
                         f"{self.lease_ms / 1000:.0f} s): a long pause or a network cut")

    def ensure_held(self) -> None:
        """Before every write: our heartbeats are recent enough that no one else can have the lock."""
        if not self.held:
            return
        self._check_age()
        if self.lost is not None:
            raise LockLost(self.lost, TOPIC)

    def update(self, **fields: Any) -> None:
        self.holder.update(fields)
        if self.held:
            self.ensure_held()
            self._beat()

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        self._beating.clear()
        if self.lost is None:
            self._tombstone()

    def _tombstone(self) -> None:
        try:
            with self._write:
                self.log.append(PREFIX + self.claim, None)
        except KopsError:
            pass  # the claim lapses on its own after the lease


def current_holder(log: KopsLog, claims: Claims, now_ms: int) -> dict[str, Any] | None:
    """Who holds the lock now, as a reader with no claim of its own sees it (`claims` folds `log`)."""
    log.refresh()
    winner = claims.winner(max(now_ms, claims.newest_ms))
    return None if winner is None else winner.holder
