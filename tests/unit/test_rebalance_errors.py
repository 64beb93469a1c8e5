"""`kops rebalance --format json` ends stdout with one object however the run ends: an error (an unreachable
cluster, a bad option) is that object too, with its exit code and its one line, which stderr still carries
(docs/rebalance.md, JSON summary)."""

from __future__ import annotations

import json
from pathlib import Path

from kops.cli.main import main
from kops.model import snapshot_format
from tests.builders import crowded
from tests.unit.test_healing import dead


def _last_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def test_an_unreachable_cluster_still_ends_stdout_with_the_summary(tmp_path: Path, capsys) -> None:
    prom = tmp_path / "run.prom"
    code = main(["rebalance", "-b", "127.0.0.1:1", "--connect-timeout", "1", "--format", "json",
                 "--metrics-file", str(prom)])
    assert code == 1
    captured = capsys.readouterr()
    doc = _last_json(captured.out)
    assert doc["status"] == "error" and doc["exit_code"] == 1 and doc["applied"] is False
    assert doc["goal"] == "replicas" and doc["plan"] is None and doc["execution"] is None
    assert "127.0.0.1:1" in doc["error"] and doc["reason"] == doc["error"]
    assert captured.err.strip() == f"error: {doc['error']}"  # the one line on stderr is kept
    assert "kops_last_run_exit_code" in prom.read_text()  # and the metrics file


def test_an_error_before_the_cluster_is_read_is_summarized_too(tmp_path: Path, capsys) -> None:
    assert main(["rebalance", "-b", "localhost:abc", "--goals", "replicas,leaders", "--format", "json"]) == 1
    doc = _last_json(capsys.readouterr().out)
    assert doc["status"] == "error" and doc["goal"] == "replicas,leaders"
    assert "port 'abc' is not a number" in doc["error"]
    snap = tmp_path / "snap.json"
    snap.write_bytes(snapshot_format.dumps(crowded()))
    assert main(["rebalance", "--snapshot", str(snap), "--goal", "bytes", "--max-bytes", "1GiB",
                 "--format", "json"]) == 1
    doc = _last_json(capsys.readouterr().out)
    assert doc["status"] == "error" and doc["goal"] == "bytes" and "--sizes" in doc["error"]


def test_text_output_and_a_success_print_no_error_object(tmp_path: Path, capsys) -> None:
    assert main(["rebalance", "-b", "localhost:abc"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("error: ")
    snap = tmp_path / "snap.json"
    snap.write_bytes(snapshot_format.dumps(crowded()))
    assert main(["rebalance", "--snapshot", str(snap), "-o", str(tmp_path / "plan.json"), "--format", "json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and json.loads(out[0])["status"] in ("planned", "noop")


def test_a_refusal_keeps_its_one_summary(tmp_path: Path, capsys) -> None:
    snap = tmp_path / "snap.json"
    snap.write_bytes(snapshot_format.dumps(dead([(4, 1), (2, 3), (1, 2)], {4})))
    assert main(["rebalance", "--snapshot", str(snap), "--heal-after", "1s", "--format", "json"]) == 3
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and json.loads(out[0])["status"] == "refused" and "exit_code" not in json.loads(out[0])
