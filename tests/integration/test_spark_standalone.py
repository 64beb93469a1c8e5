"""`kops sizes summarize --master spark://...` on a real Spark standalone cluster: a master and two workers
started from PySpark's own launcher on loopback; the summary must equal local mode's, byte for byte.

The inputs are kafka-log-dirs documents, so the job's Python stage (parsing them) runs on the workers' Python
workers, which import the job shipped with it (kops/cli/spark_run.py zips it for non-local masters)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.integration.test_sizes_job import summary, week_of_documents
from tests.spark_standalone import SparkStandalone

pytest.importorskip("pyspark")
pytestmark = pytest.mark.lab


def summarize(inputs: Path, out: Path, master: str, tmp: Path) -> subprocess.CompletedProcess:
    """The command, with its temporary files (Python's: TMPDIR) in `tmp`."""
    tmp.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "kops.cli.main", "sizes", "summarize", str(inputs), "--out", str(out),
                           "--master", master], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TMPDIR": str(tmp)})


@pytest.mark.timeout(600)  # two Spark applications and four JVMs: past the default 300 s on a loaded machine
def test_a_standalone_cluster_summarises_exactly_as_local_mode(tmp_path: Path) -> None:
    inputs = tmp_path / "logdirs"
    week_of_documents(inputs, 12)
    local = summarize(inputs, tmp_path / "local", "local[2]", tmp_path / "tmp")
    assert local.returncode == 0, local.stderr
    with SparkStandalone(tmp_path / "spark", workers=2) as cluster:
        assert cluster.alive_workers() == 2
        done = summarize(inputs, tmp_path / "standalone", cluster.master_url, tmp_path / "tmp")
        assert done.returncode == 0, done.stderr
        with urllib.request.urlopen(f"http://127.0.0.1:{cluster.ui_port}/json/", timeout=5) as page:
            apps = json.loads(page.read())["completedapps"]
        assert [a["name"] for a in apps] == ["kops-sizes"]  # it ran there, not in a local fallback
    assert summary(tmp_path / "standalone") == summary(tmp_path / "local")
    assert not list((tmp_path / "tmp").glob("kops-*"))  # the job's archive and Spark's log, gone after a success
    assert "60 samples summarised" in done.stderr + done.stdout
