"""A lab cluster: a real ZooKeeper and N broker processes on loopback, described by `<dir>/lab.json`.

`up` starts ZooKeeper (unless given one), then brokers 1..N (racks round-robin), and returns once every
broker is registered and a controller is elected; the connect string, with its chroot, goes to
`<dir>/zookeeper`. Brokers started by the CLI are detached (they outlive the command, found again through
lab.json and checked against /proc); brokers started by tests are managed (the kernel kills them with the
test process). Simulated time is shared: every broker gets the same monotonic origin and scale. Disk capacities
(`--disk-capacity`) are kept in lab.json, so a restarted broker gets its own again.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field

from kops.errors import EnvironmentProblem, UsageError
from kops.lab.folder import LabFolder, rack_layout
from kops.lab.processes import cmdline_contains, die_with_parent, pid_alive
from kops.lab.zookeeper import ZooKeeperServer
from kops.units import parse_size
from kops.zk_layout import paths
from kops.zk_layout.client import ZkClient, ZkSettings
from kops.zk_layout.connect import parse_connect

CONNECT_FILE = "zookeeper"
DEFAULT_CHROOT = "/kops-lab"
BROKER_MODULE = "kops.lab.broker"


@dataclass
class LabState:
    connect: str
    time_scale: float
    clock_origin: float
    wall_origin_ms: int
    managed_zookeeper: bool
    session_timeout: float
    bandwidth: float
    racks: dict[int, str] = field(default_factory=dict)
    pids: dict[int, int] = field(default_factory=dict)
    logdirs_every: float = 300.0  # simulated seconds between the brokers' log-dir snapshots
    disk_capacity: dict[int, int] = field(default_factory=dict)  # broker -> bytes of its log dir; absent: unlimited

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> LabState:
        doc = json.loads(text)
        doc["racks"] = {int(k): v for k, v in doc.get("racks", {}).items()}
        doc["pids"] = {int(k): v for k, v in doc.get("pids", {}).items()}
        doc["disk_capacity"] = {int(k): v for k, v in doc.get("disk_capacity", {}).items()}
        return cls(**doc)


class Lab(LabFolder):
    def state(self) -> LabState:
        return self._read_state(LabState.from_json)

    def _ids(self, state: LabState) -> list[int]:
        return sorted(state.racks)

    def _owns(self, pid: int) -> bool:
        return self._is_broker(pid)

    def client(self, state: LabState | None = None) -> ZkClient:
        state = state or self.state()
        return ZkClient(ZkSettings(state.connect, connect_timeout=10.0)).start()

    # -- up / down ---------------------------------------------------------------------------------------

    def up(self, brokers: int = 3, racks: int = 3, time_scale: float = 1.0, zookeeper: str | None = None,
           session_timeout: float = 6.0, bandwidth: float = 100 * 1024 * 1024, timeout: float = 90.0,
           logdirs_every: float = 300.0, rack_of: Mapping[int, str] | None = None,
           disk_capacity: Mapping[int, int] | None = None) -> LabState:
        """Start ZooKeeper and the brokers; `rack_of` (broker id -> rack) replaces ids 1..N and round-robin racks;
        `disk_capacity`: broker id -> bytes of its log dir (`disk_capacities` reads the option)."""
        brokers = len(rack_of) if rack_of else brokers
        if brokers < 1 or racks < 1:
            raise UsageError("--brokers and --racks must be at least 1")
        if time_scale <= 0:
            raise UsageError("--time-scale must be positive")
        if self.exists():
            raise UsageError("a lab is already up here", where=str(self.directory), hint="run: kops lab down first")
        self.directory.mkdir(parents=True, exist_ok=True)
        managed = zookeeper is None
        try:  # whatever fails after this point, nothing this call started is left running
            if managed:
                server = ZooKeeperServer(self.directory / "zk", detached=self.detached).start()
                zookeeper = server.connect + DEFAULT_CHROOT
            assert zookeeper is not None
            connect = parse_connect(zookeeper)
            if not connect.chroot:
                zookeeper = zookeeper.rstrip("/") + DEFAULT_CHROOT
                connect = parse_connect(zookeeper)
            with ZkClient(ZkSettings(connect.hosts_text)) as root:
                root.ensure_path(connect.chroot or DEFAULT_CHROOT)
            state = LabState(zookeeper, time_scale, time.monotonic(), int(time.time() * 1000), managed,
                             session_timeout, bandwidth,
                             rack_layout(brokers, racks, rack_of),
                             logdirs_every=logdirs_every, disk_capacity=dict(disk_capacity or {}))
            self._save(state)
            (self.directory / CONNECT_FILE).write_text(zookeeper + "\n")
            for broker in sorted(state.racks):
                self._spawn(state, broker)
            self._save(state)
            self.wait_ready(set(state.racks), timeout)
        except BaseException:
            self.down()
            raise
        return state

    def down(self) -> list[int]:
        """Kill every broker (SIGKILL: the lab is going away), stop a ZooKeeper we started; what was stopped."""
        try:
            state: LabState | None = self.state()
        except UsageError:
            state = None
        stopped = self._kill_everything(state, 5.0)
        self.state_file.unlink(missing_ok=True)
        (self.directory / CONNECT_FILE).unlink(missing_ok=True)
        return stopped

    # -- brokers -----------------------------------------------------------------------------------------

    @staticmethod
    def _is_broker(pid: int) -> bool:
        return pid_alive(pid) and cmdline_contains(pid, BROKER_MODULE.encode())

    def _spawn(self, state: LabState, broker: int) -> int:
        logs = self.directory / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", BROKER_MODULE, "--id", str(broker), "--zookeeper", state.connect,
                   "--dir", str(self.directory.resolve()), "--rack", state.racks[broker],
                   "--time-scale", repr(state.time_scale), "--clock-origin", repr(state.clock_origin),
                   "--wall-origin-ms", str(state.wall_origin_ms), "--session-timeout", repr(state.session_timeout),
                   "--bandwidth", repr(state.bandwidth), "--logdirs-every", repr(state.logdirs_every),
                   "--disk-capacity", str(state.disk_capacity.get(broker, 0))]
        with open(logs / f"broker-{broker}.out", "ab") as out:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=self.detached,
                                       preexec_fn=None if self.detached else die_with_parent)
        self._processes[broker] = process
        self._started.append(process.pid)
        state.pids[broker] = process.pid
        return process.pid

    def start_broker(self, broker: int, timeout: float = 60.0) -> None:
        state = self.state()
        if broker not in state.racks:
            raise UsageError(f"broker {broker} is not part of this lab", hint=f"brokers are {sorted(state.racks)}")
        if self.running(broker, state):
            raise UsageError(f"broker {broker} is already running")
        with self.client(state) as client:  # a killed broker's registration lives until its session expires
            left = client.exists(paths.broker(broker))
        self._spawn(state, broker)
        self._save(state)
        self.wait_ready({broker}, timeout, need_controller=False, stale={broker: left.czxid} if left else None)

    def stop_broker(self, broker: int, timeout: float = 60.0) -> None:
        """Controlled shutdown (SIGTERM): leadership moves away before the process exits."""
        self._signal(broker, signal.SIGTERM, timeout)

    def kill_broker(self, broker: int) -> None:
        """A crash (SIGKILL): the registration vanishes only when the ZooKeeper session expires."""
        self._signal(broker, signal.SIGKILL, 5.0)

    def wait_ready(self, brokers: set[int], timeout: float, need_controller: bool = True,
                   stale: dict[int, int] | None = None) -> None:
        """Until `brokers` are registered (and a controller is elected); a broker that dies is reported.

        `stale`: broker -> czxid of a registration left by a killed process; only a newer one counts.
        """
        state = self.state()
        deadline = time.monotonic() + timeout
        stale = stale or {}
        with self.client(state) as client:
            while True:
                registered = {int(b) for b in client.children(paths.BROKER_IDS) or [] if b.isdigit()}
                for b in sorted(registered & set(stale)):
                    found = client.exists(paths.broker(b))
                    if found is None or found.czxid == stale[b]:
                        registered.discard(b)
                has_controller = client.exists(paths.CONTROLLER) is not None
                if brokers <= registered and (has_controller or not need_controller):
                    return
                for broker in sorted(brokers - registered):
                    pid = state.pids.get(broker)
                    if pid is None or not pid_alive(pid):
                        raise EnvironmentProblem(f"broker {broker} exited during startup",
                                                 where=str(self.directory / "logs" / f"broker-{broker}.out"),
                                                 hint=f"last lines: {self.log_tail(broker)}")
                if time.monotonic() > deadline:
                    raise EnvironmentProblem(
                        f"brokers {sorted(brokers - registered)} did not register within {timeout:g}s"
                        + ("" if has_controller else " (no controller elected)"),
                        where=str(self.directory / "logs"), hint="see the broker logs")
                time.sleep(0.1)

    def log_tail(self, broker: int, lines: int = 3) -> str:
        text = ""
        for name in (f"broker-{broker}.out", f"broker-{broker}.log"):
            path = self.directory / "logs" / name
            if path.exists():
                text += path.read_text(errors="replace")
        tail = [line for line in text.splitlines() if line.strip()][-lines:]
        return " | ".join(tail) or "(empty)"



def disk_capacities(values: Iterable[str], brokers: Iterable[int]) -> dict[int, int]:
    """`--disk-capacity` values: SIZE for every broker, ID=SIZE for one (it wins over SIZE); broker -> bytes."""
    ids = sorted(brokers)
    default: int | None = None
    each: dict[int, int] = {}
    for value in values:
        name, sep, size_text = value.rpartition("=")
        try:
            size = parse_size(size_text.strip())
        except ValueError as exc:
            raise UsageError(f"--disk-capacity {value}: {exc}",
                             hint="write SIZE or ID=SIZE, e.g. 2GiB or 3=1GiB") from None
        if size <= 0:
            raise UsageError(f"--disk-capacity {value}: a disk holds at least one byte",
                             hint="leave the option out for an unlimited disk")
        if not sep:
            if default is not None:
                raise UsageError(f"--disk-capacity {value}: a capacity for every broker was already given",
                                 hint="give SIZE once, and ID=SIZE for brokers that differ")
            default = size
            continue
        broker = int(name) if name.strip().isdigit() else None
        if broker not in ids:
            raise UsageError(f"--disk-capacity {value}: no broker {name.strip()} in this lab",
                             hint=f"brokers are {ids[0]}..{ids[-1]}" if ids else "start at least one broker")
        if broker in each:
            raise UsageError(f"--disk-capacity {value}: broker {broker} was given a capacity already")
        each[broker] = size
    out = {b: default for b in ids} if default is not None else {}
    out.update(each)
    return out
