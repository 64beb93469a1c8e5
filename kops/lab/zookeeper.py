"""A real ZooKeeper server for the lab and the tests, run from Apache ZooKeeper's jars on Maven Central.

`install()` (`kops lab install`, `make setup`) resolves kops/lab/zookeeper.pom.xml, the one place the version is
pinned, into `~/.cache/kops/zookeeper/<version>-<pom digest>` with `kops.lab.maven`, as Kafka's jars are
fetched; the server runs as `java -cp "<jars>/*" org.apache.zookeeper.server.ZooKeeperServerMain zoo.cfg`. It
listens on loopback only, on a free port, with its own data folder and the AdminServer off (it would take 8080).

Two lifetimes:
- managed (tests, library use): the server dies with the Python process that started it — stopped at
  interpreter exit, and killed by the kernel (PR_SET_PDEATHSIG) if that process is killed outright;
- detached (`kops lab`): it outlives the command and is found again through `<dir>/zookeeper.pid`.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from kops.errors import EnvironmentProblem
from kops.lab import maven
from kops.lab.ports import free_port
from kops.lab.processes import cmdline_contains, die_with_parent, pid_alive, signal_and_wait

MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
PID_FILE = "zookeeper.pid"
PORT_FILE = "zookeeper.port"
LOG_FILE = "zookeeper.log"


POM = Path(__file__).with_name("zookeeper.pom.xml")


def pinned_version() -> str:
    """The version the pom pins (its <zookeeper.version> property)."""
    found = re.search(r"<zookeeper\.version>([^<]+)</zookeeper\.version>", POM.read_text())
    if not found:
        raise EnvironmentProblem("no <zookeeper.version> in the pom", where=str(POM))
    return found.group(1).strip()


def jars_folder() -> Path:
    """One folder per version and pom: a changed pom (a dependency added) is fetched anew, not found stale."""
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:8]
    return maven.cache_base() / "zookeeper" / f"{pinned_version()}-{digest}"


def install() -> tuple[Path, bool]:
    """Fetch ZooKeeper's jars if missing; (their folder, whether anything was downloaded)."""
    folder = jars_folder()
    return folder, maven.fetch(POM, folder, "zookeeper-[0-9]*.jar", "ZooKeeper")


def zookeeper_jars() -> Path:
    """The folder of the fetched jars; a clear error when `kops lab install` has not fetched them."""
    folder = jars_folder()
    if not maven.fetched(folder):
        raise EnvironmentProblem(f"ZooKeeper {pinned_version()} is not installed",
                                 hint="run: kops lab install (needs Maven), or make setup")
    return folder


def java_executable() -> str:
    """JAVA_HOME's java, else the one on PATH; a clear error when there is none."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise EnvironmentProblem(
            "Java is not installed; ZooKeeper (and Spark) need a Java 11+ runtime",
            hint="install one (Debian/Ubuntu: apt-get install -y openjdk-17-jre-headless) or set JAVA_HOME",
        )
    return found


def four_letter_word(host: str, port: int, word: str = "ruok", timeout: float = 1.0) -> str | None:
    """Send a four-letter command; None when nothing answers."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(word.encode("ascii"))
            chunks = []
            while True:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                chunks.append(chunk)
            return b"".join(chunks).decode("utf-8", errors="replace")
    except OSError:
        return None


class ZooKeeperServer:
    """One standalone ZooKeeper server process."""

    def __init__(self, directory: Path | str, *, port: int | None = None, heap_mb: int = 512, detached: bool = False):
        self.directory = Path(directory)
        self.port = port
        self.heap_mb = heap_mb
        self.detached = detached
        self.process: subprocess.Popen[bytes] | None = None
        self.pid: int | None = None

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _write_config(self) -> Path:
        data = self.directory / "data"
        data.mkdir(parents=True, exist_ok=True)
        cfg = self.directory / "zoo.cfg"
        cfg.write_text(
            "\n".join(
                [
                    "tickTime=500",
                    f"dataDir={data}",
                    f"clientPort={self.port}",
                    "clientPortAddress=127.0.0.1",
                    "maxClientCnxns=0",
                    "minSessionTimeout=1000",
                    "maxSessionTimeout=60000",
                    "admin.enableServer=false",
                    "4lw.commands.whitelist=ruok,srvr,mntr,stat",
                    "autopurge.purgeInterval=1",
                    "",
                ]
            )
        )
        log_cfg = self.directory / "log4j2.properties"
        log_cfg.write_text(
            "\n".join(
                [
                    "status = error",
                    "appender.file.type = File",
                    "appender.file.name = file",
                    f"appender.file.fileName = {self.directory / LOG_FILE}",
                    "appender.file.layout.type = PatternLayout",
                    "appender.file.layout.pattern = %d{ISO8601} %-5p [%t] %c{1}: %m%n",
                    "rootLogger.level = info",
                    "rootLogger.appenderRef.file.ref = file",
                    "",
                ]
            )
        )
        return cfg

    def start(self, timeout: float = 60.0) -> ZooKeeperServer:
        java = java_executable()
        jars = zookeeper_jars()
        self.directory.mkdir(parents=True, exist_ok=True)
        attempts = 1 if self.port else 3
        for attempt in range(attempts):
            if not self.port or attempt:
                self.port = free_port()
            cfg = self._write_config()
            command = [
                java,
                f"-Xmx{self.heap_mb}m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-Dzookeeper.admin.enableServer=false",
                f"-Dlog4j2.configurationFile={self.directory / 'log4j2.properties'}",
                "-Dzookeeper.jmx.log4j.disable=true",
                "-cp",
                f"{jars}/*",
                MAIN_CLASS,
                str(cfg),
            ]
            out = open(self.directory / "zookeeper.out", "ab")  # noqa: SIM115 - the server process keeps it
            try:
                self.process = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=self.detached,
                    preexec_fn=None if self.detached else die_with_parent,
                )
            finally:
                out.close()
            self.pid = self.process.pid
            if not self.detached:
                atexit.register(self.stop)
            if self._wait_ready(timeout):
                (self.directory / PID_FILE).write_text(str(self.pid))
                (self.directory / PORT_FILE).write_text(str(self.port))
                return self
            self.stop()
        raise EnvironmentProblem(
            f"ZooKeeper did not start within {timeout:g}s",
            where=str(self.directory / LOG_FILE),
            hint=f"see the log; last lines: {self.log_tail()}",
        )

    def _wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                return False
            if four_letter_word("127.0.0.1", int(self.port or 0), "ruok", 0.5) == "imok":
                return True
            time.sleep(0.1)
        return False

    def log_tail(self, lines: int = 3) -> str:
        text = ""
        for name in (LOG_FILE, "zookeeper.out"):
            path = self.directory / name
            if path.exists():
                text += path.read_text(errors="replace")
        tail = [line for line in text.splitlines() if line.strip()][-lines:]
        return " | ".join(tail) or "(empty)"

    def running(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        return self.pid is not None and pid_alive(self.pid)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after `timeout`; idempotent."""
        pid = self.pid
        if pid is None:
            return
        try:
            if self.process is not None:
                if self.process.poll() is None:
                    self.process.terminate()
                    try:
                        self.process.wait(timeout)
                    except subprocess.TimeoutExpired:
                        self.process.kill()
                        self.process.wait(5)
            else:
                signal_and_wait(pid, signal.SIGTERM, timeout)
        except ProcessLookupError:
            pass
        finally:
            self.pid = None
            for name in (PID_FILE, PORT_FILE):
                (self.directory / name).unlink(missing_ok=True)
            if not self.detached:
                atexit.unregister(self.stop)

    @classmethod
    def attach(cls, directory: Path | str) -> ZooKeeperServer | None:
        """The detached server recorded in `directory`, if it is still running."""
        directory = Path(directory)
        try:
            pid = int((directory / PID_FILE).read_text())
            port = int((directory / PORT_FILE).read_text())
        except (OSError, ValueError):
            return None
        server = cls(directory, port=port, detached=True)
        server.pid = pid
        if not pid_alive(pid) or not _is_zookeeper(pid):
            return None
        return server


def _is_zookeeper(pid: int) -> bool:
    """Guard against a recycled pid: the process must be our Java main class."""
    return cmdline_contains(pid, MAIN_CLASS.encode())
