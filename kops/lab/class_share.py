"""Class-data sharing for the lab's real Kafka: each broker start parses and verifies some ten thousand classes.
A dynamic CDS archive of what a broker loads, trained once per installed version and Java runtime, lets every
later JVM of that version (brokers and Kafka's tools) map them instead: measured on this project's 2-core machine,
a four-broker Kafka 4 start took 25-29 s of CPU against 36-39 s without, and a tool half its time. The test suite
starts dozens of clusters on two cores, so that is minutes.

Training (`kops lab install` runs it, `make setup` too) starts a one-broker lab with `-XX:ArchiveClassesAtExit` and
stops it cleanly: the JVM writes the archive as it exits, to a temporary name renamed into place only when whole.
Without an archive, or with one another runtime wrote, the JVMs run exactly as before (kafka_dist.Distribution.java).
"""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path

from kops.errors import KopsError
from kops.lab.kafka_dist import Distribution
from kops.lab.kafka_lab import KafkaLab


def train(dist: Distribution) -> bool:
    """Write `dist`'s class archive if it has none; whether one was written. A training run that fails leaves
    nothing behind and is not an error: the lab works without the archive, only slower to start."""
    target = dist.class_archive()
    if target.exists():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}")
    with tempfile.TemporaryDirectory(prefix="kops-class-share-") as scratch:
        lab = KafkaLab(Path(scratch) / "lab", detached=False)
        lab.archive_to = partial
        try:
            lab.up(dist.engine, brokers=1, racks=1)
            lab.stop_broker(1)  # SIGTERM: a clean exit, when the JVM writes the archive
        except KopsError:
            return False
        finally:
            lab.down()
    if not partial.exists() or partial.stat().st_size == 0:
        partial.unlink(missing_ok=True)
        return False
    os.replace(partial, target)
    return True
