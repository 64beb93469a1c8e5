"""The lab's class archive on real Kafka 4: trained by a one-broker lab started and stopped once, then mapped by
every later JVM of that version (the test reads the JVM's own class-load log), and harmless when stale."""

from __future__ import annotations

import base64
import re
import subprocess

import pytest

from kops.lab import class_share
from kops.lab.kafka_config import random_cluster_id
from kops.lab.kafka_dist import Distribution
from tests.engines import require_real

pytestmark = pytest.mark.lab
STORAGE_TOOL = "kafka.tools.StorageTool"


def test_cluster_ids_are_kafkas_uuid_strings() -> None:
    for found in (random_cluster_id() for _ in range(2000)):
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", found) and not found.startswith("-"), found
        assert len(base64.urlsafe_b64decode(found + "==")) == 16


@pytest.fixture(scope="module")
def private_dist(tmp_path_factory: pytest.TempPathFactory) -> Distribution:
    """Kafka 4's installed jars seen through a folder of this test's own, so its archive is trained afresh."""
    real = require_real("kafka-4")
    lib = tmp_path_factory.mktemp("cache") / real.version
    lib.symlink_to(real.lib, target_is_directory=True)
    return Distribution(real.engine, real.version, lib)


def run(dist: Distribution, *jvm: str) -> subprocess.CompletedProcess[str]:
    command = dist.java(STORAGE_TOOL, "random-uuid")
    return subprocess.run([command[0], *jvm, *command[1:]], capture_output=True, text=True, timeout=120, check=True)


def test_a_trained_archive_is_mapped_by_later_jvms(private_dist: Distribution) -> None:
    assert not private_dist.class_archive().exists()
    assert "-XX:SharedArchiveFile" not in " ".join(private_dist.java(STORAGE_TOOL))
    assert class_share.train(private_dist) is True
    assert private_dist.class_archive().stat().st_size > 1_000_000
    assert class_share.train(private_dist) is False  # once per version and runtime
    assert not list(private_dist.class_archive().parent.glob(".*"))  # no partial file left
    loaded = run(private_dist, "-Xlog:class+load=info").stdout
    shared = [line for line in loaded.splitlines() if " kafka." in line and "shared objects file (top)" in line]
    assert shared, loaded[-2000:]  # Kafka's own classes came from the archive
    quiet = run(private_dist)
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}\n", quiet.stdout), quiet.stdout


def test_a_stale_archive_is_ignored_without_a_word_on_stdout(private_dist: Distribution) -> None:
    archive = private_dist.class_archive()
    archive.parent.mkdir(parents=True, exist_ok=True)
    if archive.exists():
        archive.chmod(0o644)
    archive.write_bytes(b"not an archive this runtime wrote" * 100)
    done = run(private_dist)
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}\n", done.stdout), done.stdout
