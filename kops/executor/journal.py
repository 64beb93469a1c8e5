"""Where execution records live: `/kops/executions/<id>` (shared) and a copy beside the plan (local).

Records are written with the znode version (compare-and-set) so two writers are detected, and the local copy
is replaced atomically (write, then rename) so a crash never leaves half a file. Cancel requests from other
processes are a child znode, `/kops/executions/<id>/cancel`, read at every poll.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from kops.errors import KopsError
from kops.executor import record as records
from kops.executor.record import ExecutionRecord
from kops.kafka import paths
from kops.kafka.client import NodeExists, ZkClient

MAX_RECORD_BYTES = 900_000  # ZooKeeper's jute.maxbuffer is 1 MiB by default
CANCEL = "cancel"


def local_copy(plan_path: str, execution_id: str) -> Path:
    plan = Path(plan_path)
    return plan.with_name(f"{plan.stem}.{execution_id}.execution.json")


class Journal:
    def __init__(self, client: ZkClient) -> None:
        self.client = client
        self._versions: dict[str, int] = {}

    def create(self, record: ExecutionRecord) -> None:
        data = self._checked(record)
        self.client.ensure_path(paths.KOPS_EXECUTIONS)
        self.client.create(paths.execution(record.id), data)
        self._versions[record.id] = 0
        self._write_local(record, data)

    def save(self, record: ExecutionRecord) -> None:
        data = self._checked(record)
        version = self._versions.get(record.id, -1)
        stat = self.client.set(paths.execution(record.id), data, version)
        self._versions[record.id] = stat.version
        self._write_local(record, data)

    def _checked(self, record: ExecutionRecord) -> bytes:
        data = records.dumps(record)
        if len(data) > MAX_RECORD_BYTES:
            raise KopsError(f"the execution record would be {len(data)} bytes, more than a znode holds",
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
        node = self.client.get(paths.execution(execution_id))
        if node is None:
            raise KopsError(f"no execution {execution_id!r} on this cluster", where=paths.execution(execution_id),
                            hint="`kops status` lists the last ones")
        self._versions[execution_id] = node.stat.version
        return records.loads(node.data or b"", paths.execution(execution_id))

    def ids(self) -> list[str]:
        """Execution ids, oldest first (ids start with a UTC timestamp)."""
        return sorted(self.client.children(paths.KOPS_EXECUTIONS) or [])

    def latest(self, plan_digest: str | None = None, kind: str | None = None) -> ExecutionRecord | None:
        for execution_id in reversed(self.ids()):
            try:
                found = self.load(execution_id)
            except KopsError:
                continue
            if (plan_digest is None or found.plan_digest == plan_digest) and (kind is None or found.kind == kind):
                return found
        return None

    # -- cancel requests -------------------------------------------------------------------------------------

    def request_cancel(self, execution_id: str, now: bool, by: dict[str, Any]) -> None:
        path = f"{paths.execution(execution_id)}/{CANCEL}"
        data = json.dumps({"now": now, **by}, sort_keys=True).encode()
        try:
            self.client.create(path, data)
        except NodeExists:
            self.client.set(path, data)

    def cancel_requested(self, execution_id: str) -> dict[str, Any] | None:
        node = self.client.get(f"{paths.execution(execution_id)}/{CANCEL}")
        if node is None:
            return None
        try:
            return json.loads(node.data or b"{}")
        except ValueError:
            return {"now": False}

    def clear_cancel(self, execution_id: str) -> None:
        path = f"{paths.execution(execution_id)}/{CANCEL}"
        if self.client.exists(path) is not None:
            self.client.delete(path)
