"""Apache Kafka's own jars, fetched from Maven Central, for the lab's real engines and Kafka's own tools.

Each real engine is pinned by one pom in `kops/lab/kafka_dist/` (broker `kafka_2.13` and `kafka-tools` at the
same version); `install` resolves it with `mvn dependency:copy-dependencies` into a cache outside the
repository (`$KOPS_KAFKA_CACHE`, else `$XDG_CACHE_HOME/kops/kafka`, else `~/.cache/kops/kafka`), one folder per
version, written whole or not at all by `kops.lab.maven`. A second install downloads nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from kops.errors import EnvironmentProblem, UsageError
from kops.lab import maven
from kops.lab.zookeeper import java_executable

POMS = Path(__file__).with_name("kafka_dist")
ENGINES = ("kafka-3.9", "kafka-4")


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
             logs_dir: Path | None = None, archive_to: Path | None = None) -> list[str]:
        """The command line that runs `main_class` of this distribution: its classes mapped from the class archive
        where one was trained, or (`archive_to`) written to a new archive when the process exits cleanly."""
        command = [java_executable(), f"-Xmx{heap_mb}m", f"-Xms{min(heap_mb, 64)}m", "-XX:+UseSerialGC",
                   "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
        if archive_to is not None:
            command.append(f"-XX:ArchiveClassesAtExit={archive_to}")
        elif self.class_archive().exists():
            # a stale archive (another runtime) is ignored by the JVM; its warning would reach a tool's stdout
            command += [f"-XX:SharedArchiveFile={self.class_archive()}", "-Xlog:cds=off,cds+dynamic=off"]
        if log_config is not None:
            prop = "log4j2.configurationFile" if self.log4j2 else "log4j.configuration"
            command.append(f"-D{prop}={log_config if self.log4j2 else 'file:' + str(log_config)}")
        if logs_dir is not None:
            command.append(f"-Dkafka.logs.dir={logs_dir}")
        return [*command, "-cp", f"{self.lib}/*", main_class, *args]

    def class_archive(self) -> Path:
        """Where this version's class-data-sharing archive is (kops/lab/class_share.py trains it), named for the
        Java runtime too: an archive only maps into the JVM build that wrote it."""
        java = Path(java_executable()).resolve()
        stat = java.stat()
        runtime = hashlib.sha1(f"{java}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:10]
        return self.lib.parent / "class-archives" / f"{self.version}-{runtime}.jsa"


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
    return maven.cache_base() / "kafka"


def installed(engine: str) -> Distribution | None:
    """The engine's pinned version if it is in the cache, whole."""
    version = pinned_version(engine)
    lib = cache_root() / version
    if not maven.fetched(lib):
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
    version = pinned_version(engine)
    target = cache_root() / version
    downloaded = maven.fetch(pom(engine), target, "kafka_2.13-*.jar", "real Kafka")
    return Distribution(engine, version, target), downloaded
