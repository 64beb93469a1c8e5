"""Where execution records live: on the cluster (the port's record store: `/kops/executions/<id>` through
ZooKeeper, the `__kops` topic through the Admin API) and a copy beside the plan (local).

The local copy is replaced atomically (write, then rename) so a crash never leaves half a file. Cancel
requests from other processes are kept beside the record and read at every poll.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from kops.cluster.port import RecordStore
from kops.errors import KopsError
from kops.executor import record as records
from kops.executor.record import ExecutionRecord


def local_copy(plan_path: str, execution_id: str) -> Path:
    plan = Path(plan_path)
    return plan.with_name(f"{plan.stem}.{execution_id}.execution.json")


class Journal:
    def __init__(self, store: RecordStore) -> None:
        self.store = store

    def create(self, record: ExecutionRecord) -> None:
        data = self._checked(record)
        self.store.create(record.id, data)
        self._write_local(record, data)

    def save(self, record: ExecutionRecord) -> None:
        data = self._checked(record)
        self.store.save(record.id, data)
        self._write_local(record, data)

    def _checked(self, record: ExecutionRecord) -> bytes:
        data = records.dumps(record)
        if len(data) > self.store.max_bytes:
            raise KopsError(f"the execution record would be {len(data)} bytes, more than the cluster holds in one "
                            f"record ({self.store.max_bytes})",
                            hint="split the plan (smaller playbook or --limit) and apply the parts in turn")
        return data

    @staticmethod
    def _write_local(record: ExecutionRecord, data: bytes) -> None:
        target = local_copy(record.plan_path, record.id)
        try:
            tmp = target.with_suffix(".tmp")
            tmp.write_bytes(data)
            os.replace(tmp, target)
        except OSError:
            pass  # the shared record is the one that counts; the copy is a convenience

    def load(self, execution_id: str) -> ExecutionRecord:
        data = self.store.load(execution_id)
        if data is None:
            raise KopsError(f"no execution {execution_id!r} on this cluster", where=f"execution {execution_id}",
                            hint="`kops status` lists the last ones")
        return records.loads(data, f"execution {execution_id}")

    def ids(self) -> list[str]:
        """Execution ids, oldest first (ids start with a UTC timestamp)."""
        return self.store.ids()

    def latest(self, plan_digest: str | None = None, kind: str | None = None) -> ExecutionRecord | None:
        for execution_id in reversed(self.ids()):
            try:
                found = self.load(execution_id)
            except KopsError:
                continue
            if (plan_digest is None or found.plan_digest == plan_digest) and (kind is None or found.kind == kind):
                return found
        return None

    def rollback_of(self, execution_id: str) -> ExecutionRecord | None:
        """The latest rollback started of `execution_id` (ids are ordered by time: only those after it are read)."""
        for found_id in reversed(self.ids()):
            if found_id <= execution_id:
                return None
            try:
                found = self.load(found_id)
            except KopsError:
                continue
            if found.kind == "rollback" and found.of == execution_id:
                return found
        return None

    # -- cancel requests -------------------------------------------------------------------------------------

    def request_cancel(self, execution_id: str, now: bool, by: dict[str, Any]) -> None:
        self.store.set_cancel(execution_id, json.dumps({"now": now, **by}, sort_keys=True).encode())

    def cancel_requested(self, execution_id: str) -> dict[str, Any] | None:
        data = self.store.get_cancel(execution_id)
        if data is None:
            return None
        try:
            return json.loads(data or b"{}")
        except ValueError:
            return {"now": False}

    def clear_cancel(self, execution_id: str) -> None:
        self.store.clear_cancel(execution_id)
