"""Jars from Maven Central for the lab: a pom's runtime dependencies, resolved with `mvn
dependency:copy-dependencies` into a folder of the cache outside the repository (`$XDG_CACHE_HOME/kops`, else
`~/.cache/kops`), written whole or not at all: a `.complete` marker is the last file, so a second fetch finds it
and downloads nothing, and an interrupted one leaves nothing that looks installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from kops.errors import EnvironmentProblem

MARKER = ".complete"


def cache_base() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")) / "kops"


def fetched(folder: Path) -> bool:
    return (folder / MARKER).exists()


def fetch(pom_file: Path, target: Path, expect: str, what: str) -> bool:
    """Resolve `pom_file` into `target` unless it is there whole; whether anything was downloaded. `expect` is a
    glob one fetched jar must match; `what` names the download in errors ("real Kafka", "ZooKeeper")."""
    if fetched(target):
        return False
    mvn = shutil.which("mvn")
    if mvn is None:
        raise EnvironmentProblem(f"Maven (mvn) is not installed, so {what} cannot be fetched",
                                 hint="apt-get install maven (make setup installs it where it may)")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        _copy_dependencies(mvn, pom_file, staging, expect)
        (staging / MARKER).write_text(target.name + "\n")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return True


def _copy_dependencies(mvn: str, pom_file: Path, into: Path, expect: str) -> None:
    command = [mvn, "-B", "-q", "-f", str(pom_file), "dependency:copy-dependencies", "-DincludeScope=runtime",
               f"-DoutputDirectory={into}"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=into)
    if done.returncode != 0:
        lines = [line for line in (done.stdout + done.stderr).splitlines() if "ERROR" in line] or ["(no output)"]
        raise EnvironmentProblem(f"Maven could not fetch {pom_file.name}: {lines[0].strip()[:300]}",
                                 hint=f"run by hand to see everything: {' '.join(command)}")
    if not any(into.glob(expect)):
        raise EnvironmentProblem(f"Maven fetched no {expect} for {pom_file.name}", where=str(into))
