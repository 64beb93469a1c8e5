"""Apache Kafka's own jars, fetched from Maven Central, for the lab's real engines and Kafka's own tools.

Each real engine is pinned by one pom in `kops/lab/kafka_dist/` (broker `kafka_2.13` and `kafka-tools` at the
same version); `install` resolves it with `mvn dependency:copy-dependencies` into a cache outside the
repository (`$KOPS_KAFKA_CACHE`, else `$XDG_CACHE_HOME/kops/kafka`, else `~/.cache/kops/kafka`), one folder per
version, written whole or not at all (a `.complete` marker is the last file). A second install finds the
marker and downloads nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kops.errors import EnvironmentProblem, UsageError
from kops.lab.zookeeper import java_executable

POMS = Path(__file__).with_name("kafka_dist")
ENGINES = ("kafka-3.9", "kafka-4")
MARKER = ".complete"


@dataclass(frozen=True)
class Distribution:
    """One installed Kafka version: a folder of jars and how to run its classes."""

    engine: str
    version: str
    lib: Path

    @property
    def zookeeper_mode(self) -> bool:
        return self.engine == "kafka-3.9"

    @property
    def log4j2(self) -> bool:
        """Kafka 4 logs through log4j2; 3.9 through reload4j (log4j 1 properties)."""
        return not self.zookeeper_mode

    def java(self, main_class: str, *args: str, heap_mb: int = 256, log_config: Path | None = None,
             logs_dir: Path | None = None) -> list[str]:
        """The command line that runs `main_class` of this distribution."""
        command = [java_executable(), f"-Xmx{heap_mb}m", f"-Xms{min(heap_mb, 64)}m", "-XX:+UseSerialGC",
                   "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
        if log_config is not None:
            prop = "log4j2.configurationFile" if self.log4j2 else "log4j.configuration"
            command.append(f"-D{prop}={log_config if self.log4j2 else 'file:' + str(log_config)}")
        if logs_dir is not None:
            command.append(f"-Dkafka.logs.dir={logs_dir}")
        return [*command, "-cp", f"{self.lib}/*", main_class, *args]


def pom(engine: str) -> Path:
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}", hint=f"one of: kops, {', '.join(ENGINES)}")
    return POMS / f"{engine}.pom.xml"


def pinned_version(engine: str) -> str:
    """The version the engine's pom pins (its <kafka.version> property)."""
    found = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", pom(engine).read_text())
    if not found:
        raise EnvironmentProblem("no <kafka.version> in the pom", where=str(pom(engine)))
    return found.group(1).strip()


def cache_root() -> Path:
    explicit = os.environ.get("KOPS_KAFKA_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kops" / "kafka"


def installed(engine: str) -> Distribution | None:
    """The engine's pinned version if it is in the cache, whole."""
    version = pinned_version(engine)
    lib = cache_root() / version
    if not (lib / MARKER).exists():
        return None
    return Distribution(engine, version, lib)


def require(engine: str) -> Distribution:
    found = installed(engine)
    if found is None:
        raise EnvironmentProblem(f"{engine} ({pinned_version(engine)}) is not installed",
                                 hint=f"run: kops lab install --engine {engine} (needs Maven), or make setup")
    return found


def install(engine: str) -> tuple[Distribution, bool]:
    """Fetch the engine's jars if missing; (the distribution, whether anything was downloaded)."""
    found = installed(engine)
    if found is not None:
        return found, False
    mvn = shutil.which("mvn")
    if mvn is None:
        raise EnvironmentProblem("Maven (mvn) is not installed, so real Kafka cannot be fetched",
                                 hint="apt-get install maven; everything that needs no real Kafka still runs")
    version = pinned_version(engine)
    target = cache_root() / version
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=target.parent))
    try:
        _copy_dependencies(mvn, pom(engine), staging)
        (staging / MARKER).write_text(version + "\n")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Distribution(engine, version, target), True


def _copy_dependencies(mvn: str, pom_file: Path, into: Path) -> None:
    command = [mvn, "-B", "-q", "-f", str(pom_file), "dependency:copy-dependencies", "-DincludeScope=runtime",
               f"-DoutputDirectory={into}"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=into)
    if done.returncode != 0:
        lines = [line for line in (done.stdout + done.stderr).splitlines() if "ERROR" in line] or ["(no output)"]
        raise EnvironmentProblem(f"Maven could not fetch {pom_file.name}: {lines[0].strip()[:300]}",
                                 hint=f"run by hand to see everything: {' '.join(command)}")
    if not any(into.glob("kafka_2.13-*.jar")):
        raise EnvironmentProblem(f"Maven fetched no kafka_2.13 jar for {pom_file.name}", where=str(into))
