"""What every lab engine shares: its folder with `lab.json`, the processes it started, and the faults it injects
into them (stop, kill, pause, resume). `kops.lab.kops_engine.Lab` (the kops engine) and `kops.lab.kafka_lab.KafkaLab`
(real Kafka) differ in what they start and how they know a process is theirs.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from kops.errors import KopsError, UsageError
from kops.lab.processes import is_paused, signal_and_wait
from kops.lab.zookeeper import ZooKeeperServer

STATE_FILE = "lab.json"

S = TypeVar("S")  # a lab engine's state


class LabFolder:
    kind = "broker"  # how the CLI names a process of this engine

    def __init__(self, directory: Path | str, *, detached: bool = True) -> None:
        self.directory = Path(directory)
        self.detached = detached
        self._processes: dict[int, subprocess.Popen[bytes]] = {}
        self._started: list[int] = []

    # -- what each engine provides ----------------------------------------------------------------------

    def state(self) -> Any:
        raise NotImplementedError

    def _owns(self, pid: int) -> bool:
        """The pid is alive and one of this lab's processes (guards against a recycled pid)."""
        raise NotImplementedError

    def _ids(self, state: Any) -> list[int]:
        return sorted(state.pids)

    # -- shared ------------------------------------------------------------------------------------------

    @property
    def state_file(self) -> Path:
        return self.directory / STATE_FILE

    def exists(self) -> bool:
        return self.state_file.exists()

    def _read_state(self, parse: Callable[[str], S]) -> S:
        """lab.json parsed, or one line: no lab here (run kops lab up), or an unreadable one (down, then up)."""
        try:
            return parse(self.state_file.read_text())
        except FileNotFoundError:
            raise UsageError("no lab here", where=str(self.directory), hint="run: kops lab up") from None
        except (ValueError, TypeError, KeyError) as exc:
            raise KopsError(f"unreadable lab state ({exc})", where=str(self.state_file),
                            hint="run: kops lab down, then kops lab up") from None

    def _save(self, state: Any) -> None:
        self._write_state(state.to_json())

    def _write_state(self, text: str) -> None:
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(self.state_file)

    def running(self, process_id: int, state: Any = None) -> bool:
        pid = (state or self.state()).pids.get(process_id)
        return pid is not None and self._owns(pid)

    def paused(self, process_id: int, state: Any = None) -> bool:
        return is_paused((state or self.state()).pids.get(process_id))

    def _running_pid(self, process_id: int) -> int:
        state = self.state()
        if process_id not in self._ids(state):
            raise UsageError(f"{self.kind} {process_id} is not part of this lab", hint=f"they are {self._ids(state)}")
        pid = state.pids.get(process_id)
        if pid is None or not self._owns(pid):
            raise UsageError(f"{self.kind} {process_id} is not running",
                             hint=f"start it: kops lab broker start {process_id}")
        return int(pid)

    def pause_broker(self, process_id: int) -> None:
        """SIGSTOP: alive, sockets open, answering nothing (a long GC pause, a hung disk)."""
        os.kill(self._running_pid(process_id), signal.SIGSTOP)

    def resume_broker(self, process_id: int) -> None:
        os.kill(self._running_pid(process_id), signal.SIGCONT)

    def _signal(self, process_id: int, sig: int, timeout: float) -> None:
        """Signal a running process and wait for it to go (a paused one is let run first, or it cannot exit)."""
        pid = self._running_pid(process_id)
        if self.paused(process_id):
            os.kill(pid, signal.SIGCONT)
        signal_and_wait(pid, sig, timeout)
        process = self._processes.pop(process_id, None)
        if process is not None:
            process.wait(10)

    def _kill_everything(self, state: Any, grace: float) -> list[int]:
        """SIGKILL every process of `state` (None: an unreadable lab) and of this object, and stop a ZooKeeper the lab
        started: the lab is going away, a graceful shutdown would only move leadership around. What was killed."""
        stopped = []
        for process_id, pid in sorted((state.pids if state is not None else {}).items()):
            if self._owns(pid) and signal_and_wait(pid, signal.SIGKILL, grace):
                stopped.append(process_id)
        for process in self._processes.values():
            if process.poll() is None:
                process.kill()
            process.wait(grace)
        self._processes.clear()
        if state is None or state.managed_zookeeper:
            server = ZooKeeperServer.attach(self.directory / "zk")
            if server is not None:
                server.stop()
        return stopped

    def pids_alive(self) -> list[int]:
        """Pids of processes this object started that still run (after `down`: none)."""
        return [p.pid for p in self._processes.values() if p.poll() is None] + [
            pid for pid in self._started if self._owns(pid)]


def rack_layout(brokers: int, racks: int, rack_of: Mapping[int, str] | None = None) -> dict[int, str]:
    """Broker id -> rack: ids 1..N with racks round-robin, or exactly `rack_of` (a rehearsal's clone)."""
    if rack_of:
        return dict(sorted(rack_of.items()))
    return {b: f"rack-{(b - 1) % racks + 1}" for b in range(1, brokers + 1)}
