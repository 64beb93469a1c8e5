"""The ZooKeeper launcher: real processes, started and killed for real, none left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kops.errors import EnvironmentProblem
from kops.lab.zookeeper import ZooKeeperServer, four_letter_word, java_executable


def _gone(pid: int, within: float = 15.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # a zombie still answers kill(0); it is gone for our purposes once its state is Z
        try:
            if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
                return True
        except OSError:
            return True
        time.sleep(0.1)
    return False


def test_missing_java_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(EnvironmentProblem) as info:
        java_executable()
    assert "Java is not installed" in info.value.one_line() and "openjdk" in info.value.one_line()


def test_detached_server_survives_its_starter_and_stops_by_pid_file(tmp_path: Path) -> None:
    server = ZooKeeperServer(tmp_path / "zk", detached=True).start()
    try:
        assert four_letter_word("127.0.0.1", server.port, "ruok") == "imok"
        again = ZooKeeperServer.attach(tmp_path / "zk")
        assert again is not None and again.pid == server.pid and again.connect == server.connect
        command_line = Path(f"/proc/{server.pid}/cmdline").read_text().replace("\0", " ")
        assert "-Dzookeeper.admin.enableServer=false" in command_line
        pid = server.pid
        again.stop()
        assert _gone(pid)
        assert ZooKeeperServer.attach(tmp_path / "zk") is None
    finally:
        server.stop()


SCRIPT = textwrap.dedent(
    """
    import sys, time
    from kops.lab.zookeeper import ZooKeeperServer
    server = ZooKeeperServer(sys.argv[1]).start()
    print(server.pid, flush=True)
    if sys.argv[2] == "sleep":
        time.sleep(120)
    """
)


@pytest.mark.parametrize("ending", ["exit", "sigkill"])
def test_managed_server_never_outlives_its_process(tmp_path: Path, ending: str) -> None:
    starter = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "zk"), "sleep" if ending == "sigkill" else "exit"],
        stdout=subprocess.PIPE,
        text=True,
    )
    pid = int(starter.stdout.readline())
    if ending == "sigkill":
        starter.send_signal(signal.SIGKILL)
    starter.wait(60)
    assert _gone(pid), f"ZooKeeper pid {pid} outlived the process that started it ({ending})"
