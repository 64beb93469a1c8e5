"""A Spark standalone cluster on loopback: one master and N workers from PySpark's own launcher (`spark-class`),
so `kops sizes summarize --master spark://...` is tried against a real cluster, not only local mode (test code:
tests/integration/test_spark_standalone.py).

Everything binds to 127.0.0.1 (SPARK_LOCAL_IP, --host), or a worker registers on the machine's network address.
Workers run this interpreter's Python (PYSPARK_PYTHON) for the job's Python stages.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from kops.errors import EnvironmentProblem
from kops.lab.ports import free_port
from kops.lab.zookeeper import java_executable


def spark_home() -> Path:
    import pyspark  # noqa: PLC0415 - only the Spark lab needs it

    return Path(pyspark.__file__).resolve().parent


class SparkStandalone:
    """`with SparkStandalone(dir, workers=2) as cluster: ... cluster.master_url ...`"""

    def __init__(self, directory: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.directory, self.workers, self.cores, self.memory = directory, workers, cores, memory
        self.port, self.ui_port = free_port(), free_port()
        self.processes: dict[str, subprocess.Popen] = {}

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _env(self) -> dict[str, str]:
        java = java_executable()
        return {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
                "PYSPARK_PYTHON": sys.executable, "SPARK_LOG_DIR": str(self.directory),
                "JAVA_HOME": str(Path(java).resolve().parents[1]),
                "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}  # as tests/spark-conf says

    def _spawn(self, name: str, *args: str) -> None:
        log = (self.directory / f"{name}.log").open("ab")
        command = [str(spark_home() / "bin" / "spark-class"), *args]
        self.processes[name] = subprocess.Popen(command, env=self._env(), stdout=log, stderr=subprocess.STDOUT,
                                                start_new_session=True)

    def start(self, timeout: float = 90.0) -> SparkStandalone:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._spawn("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.port), "--webui-port", str(self.ui_port))
        for n in range(1, self.workers + 1):
            work = self.directory / f"worker-{n}"
            work.mkdir(exist_ok=True)
            self._spawn(f"worker-{n}", "org.apache.spark.deploy.worker.Worker", self.master_url, "--host", "127.0.0.1",
                        "--cores", str(self.cores), "--memory", self.memory, "--webui-port", str(free_port()),
                        "--work-dir", str(work))
        self._wait_workers(timeout)
        return self

    def alive_workers(self) -> int:
        """Workers the master counts as alive (its JSON status page); -1 while it does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as answer:
                return int(json.loads(answer.read()).get("aliveworkers", 0))
        except (OSError, ValueError):
            return -1

    def _wait_workers(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.alive_workers() < self.workers:
            dead = [name for name, p in self.processes.items() if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                self.stop()
                raise EnvironmentProblem(f"the Spark standalone cluster did not start ({self.alive_workers()} of "
                                         f"{self.workers} workers alive; exited: {dead})", where=str(self.directory),
                                         hint="see master.log and worker-*.log there")
            time.sleep(0.5)

    def stop(self) -> None:
        for process in reversed(self.processes.values()):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.processes.clear()

    def __enter__(self) -> SparkStandalone:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()
