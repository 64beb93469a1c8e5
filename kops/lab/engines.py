"""Which engine a lab runs, and the lab object for a folder: the kops engine or real Apache Kafka.

`<dir>/lab.json` names the engine (`kops` when it does not: labs from before real engines). Both lab classes
share the verbs the CLI and tests use: up, down, state, running, start/stop/kill/pause/resume a broker.
"""

from __future__ import annotations

import json
from pathlib import Path

from kops.lab.kafka_dist import ENGINES as REAL_ENGINES
from kops.lab.kafka_dist import installed, pinned_version
from kops.lab.kafka_lab import KafkaLab
from kops.lab.kops_engine import Lab

KOPS = "kops"
ENGINES = (KOPS, *REAL_ENGINES)


def engine_of(directory: Path) -> str:
    try:
        return str(json.loads((directory / "lab.json").read_text()).get("engine", KOPS))
    except (OSError, ValueError, AttributeError):
        return KOPS


def open_lab(directory: Path, *, detached: bool = True) -> Lab | KafkaLab:
    if engine_of(directory) == KOPS:
        return Lab(directory, detached=detached)
    return KafkaLab(directory, detached=detached)


def availability() -> dict[str, str]:
    """Each engine and what it runs here: a version, or why not."""
    found = {KOPS: "the seeds' controller on Python brokers (always available)"}
    for engine in REAL_ENGINES:
        dist = installed(engine)
        found[engine] = (f"Apache Kafka {dist.version} (installed)" if dist
                         else f"Apache Kafka {pinned_version(engine)} (not installed: kops lab install)")
    return found
