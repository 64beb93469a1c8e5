"""--metrics-file (issue 38): the gauges of a run, read back with prometheus-client's own parser, named as
Prometheus's conventions ask, and written on every way out of a command that can be reached without a cluster
(the runs through a cluster are tests/integration/test_rebalance.py's)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import typer
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kops.cli.main import main
from kops.cli.run_metrics import recorded
from kops.errors import NotReady, UsageError
from kops.executor.events import BatchDone, MoveDone
from kops.executor.executor import Stale
from kops.holder import Locked
from kops.metrics import OUTCOMES, Imbalance, Moves, RunMetrics, Tally, registry
from kops.model import plan_format
from kops.model.plan import Plan

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_PLAN = ROOT / "tests/golden/rebalance/expected-plan.json"


def golden_plan() -> Plan:
    return plan_format.loads(GOLDEN_PLAN.read_bytes(), str(GOLDEN_PLAN))


def parsed(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Each metric family's samples, by their sorted labels, as Prometheus's client library reads them."""
    found: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        assert family.type == "gauge", family.name  # a file rewritten each run holds no counter
        found[family.name] = {tuple(sorted(s.labels.items())): s.value for s in family.samples}
    return found


def only(samples: dict[tuple[tuple[str, str], ...], float], **labels: str) -> float:
    matching = [v for k, v in samples.items() if {**dict(k), **labels} == dict(k)]
    assert len(matching) == 1, (samples, labels)
    return matching[0]


SAMPLE = RunMetrics("rebalance", "prod-eu", 1_800_000_000.0, 1_800_000_042.5, 42.5, 0, "applied",
                    planned=Moves(3, 1, 3 * 2**30), completed=Moves(2, 1, 2 * 2**30),
                    imbalance=(Imbalance("replicas", 0.25, 0.125),))


def test_the_gauges_of_a_run_read_back_with_prometheus_s_parser() -> None:
    families = parsed(generate_latest(registry(SAMPLE)).decode())
    assert only(families["kops_last_run_start_timestamp_seconds"]) == 1_800_000_000.0
    assert only(families["kops_last_run_end_timestamp_seconds"]) == 1_800_000_042.5
    assert only(families["kops_last_run_duration_seconds"]) == 42.5
    assert only(families["kops_last_run_exit_code"]) == 0
    assert {dict(k)["outcome"]: v for k, v in families["kops_last_run_outcome"].items()} == {
        o: float(o == "applied") for o in OUTCOMES}
    assert only(families["kops_last_run_planned_moves"], kind="replica") == 3
    assert only(families["kops_last_run_planned_moves"], kind="leader") == 1
    assert only(families["kops_last_run_completed_moves"], kind="replica") == 2
    assert only(families["kops_last_run_planned_bytes"]) == 3 * 2**30
    assert only(families["kops_last_run_completed_bytes"]) == 2 * 2**30
    assert only(families["kops_last_run_imbalance_before_ratio"], goal="replicas") == 0.25
    assert only(families["kops_last_run_imbalance_after_ratio"], goal="replicas") == 0.125
    assert only(families["kops_last_run_brokers_absent"]) == 0 and only(families["kops_last_run_brokers_healed"]) == 0
    for samples in families.values():
        for labels in samples:
            assert {"command": "rebalance", "cluster": "prod-eu"}.items() <= dict(labels).items()


def test_names_follow_prometheus_conventions() -> None:
    """A kops_ prefix, snake case, base units with the unit last, no counter suffixes on gauges, and help text
    that says healing does not exist yet."""
    text = generate_latest(registry(SAMPLE)).decode()
    families = list(text_string_to_metric_families(text))
    units = {"seconds", "bytes", "ratio"}
    for family in families:
        assert re.fullmatch(r"kops_[a-z][a-z0-9_]*[a-z0-9]", family.name), family.name
        assert not family.name.endswith(("_total", "_count", "_sum", "_bucket", "_info")), family.name
        assert not re.search(r"_(milliseconds|minutes|hours|kilobytes|megabytes|mib|percent)(_|$)", family.name)
        unit = family.name.rsplit("_", 1)[-1]
        assert unit in units or not any(f"_{u}_" in family.name + "_" for u in units), family.name
        assert family.documentation.endswith(".") or family.documentation.endswith(")"), family.name
        for sample in family.samples:
            assert all(re.fullmatch(r"[a-z][a-z0-9_]*", k) for k in sample.labels), sample
    timestamps = [f.name for f in families if "timestamp" in f.name]
    assert timestamps and all(n.endswith("_timestamp_seconds") for n in timestamps)
    healing = {f.name: f.documentation for f in families if f.name.startswith("kops_last_run_brokers_")}
    assert len(healing) == 2 and all("healing.md" in d or "--heal-after" in d for d in healing.values())


def test_an_imbalance_not_measured_is_absent_not_zero() -> None:
    families = parsed(generate_latest(registry(dataclasses.replace(SAMPLE, imbalance=()))).decode())
    assert not any("imbalance" in name for name in families)


def test_the_tally_counts_what_this_run_finished_as_the_plan_s_summary_counts() -> None:
    plan = golden_plan()
    assert Moves.of(plan.moves) == Moves(plan.summary.moves, plan.summary.leader_moves, plan.summary.bytes)
    tally = Tally()
    assert tally.completed(plan.batches) == Moves()
    tally(BatchDone(plan.batches[0].index, len(plan.batches), 1.0))
    assert tally.completed(plan.batches) == Moves.of(plan.moves)
    rolling = Tally()  # rolling: one move at a time, by partition
    first = plan.moves[0]
    rolling(MoveDone(first.topic, first.partition, 0.5))
    assert rolling.completed(plan.batches) == Moves.of([first])


@pytest.mark.parametrize(("raised", "code", "outcome"), [
    (None, 0, "noop"),
    (NotReady("busy"), 3, "refused"),
    (typer.Exit(3), 3, "stopped"),
    (Stale("drifted"), 4, "stale"),
    (Locked("held"), 5, "locked"),
    (UsageError("bad"), 1, "error"),
    (KeyboardInterrupt(), 1, "error"),
    (RuntimeError("a bug"), 1, "error"),
])
def test_the_file_is_written_on_every_way_out(tmp_path: Path, raised: BaseException | None, code: int,
                                               outcome: str) -> None:
    path = tmp_path / "kops.prom"
    path.write_text("# the last run's\n")

    def body() -> None:
        with recorded(path, "apply", "staging") as run:
            if raised is None:
                run.outcome = "noop"
                return
            raise raised

    if raised is None:
        body()
    else:
        with pytest.raises(type(raised)):
            body()
    families = parsed(path.read_text())
    assert only(families["kops_last_run_exit_code"]) == code
    assert only(families["kops_last_run_outcome"], outcome=outcome) == 1
    assert sum(families["kops_last_run_outcome"].values()) == 1
    assert list(tmp_path.iterdir()) == [path]  # the temporary file was renamed, none left behind


def test_through_the_cli_an_unreachable_cluster_and_a_missing_plan_are_errors(tmp_path: Path) -> None:
    prom = tmp_path / "rebalance.prom"
    assert main(["rebalance", "-b", "127.0.0.1:1", "--connect-timeout", "0.2", "--metrics-file", str(prom)]) == 1
    families = parsed(prom.read_text())
    assert only(families["kops_last_run_exit_code"]) == 1
    assert only(families["kops_last_run_outcome"], outcome="error") == 1
    assert only(families["kops_last_run_planned_moves"], kind="replica") == 0
    assert only(families["kops_last_run_duration_seconds"]) >= 0
    assert dict(next(iter(families["kops_last_run_exit_code"])))["cluster"] == "127.0.0.1:1"

    prom = tmp_path / "apply.prom"
    assert main(["apply", str(tmp_path / "missing.json"), "-z", "127.0.0.1:1/x", "--metrics-file", str(prom)]) == 1
    assert only(parsed(prom.read_text())["kops_last_run_outcome"], command="apply", outcome="error") == 1


def test_through_the_cli_a_plan_that_changes_nothing_is_a_noop(tmp_path: Path) -> None:
    plan = golden_plan()
    empty = dataclasses.replace(plan, batches=(), election=(),
                                rollback=dataclasses.replace(plan.rollback, batches=(), election=()))
    plan_file, prom = tmp_path / "empty.json", tmp_path / "apply.prom"
    plan_file.write_bytes(plan_format.dumps(empty))
    assert main(["apply", str(plan_file), "--yes", "--metrics-file", str(prom)]) == 0
    families = parsed(prom.read_text())
    assert only(families["kops_last_run_outcome"], outcome="noop", cluster="golden") == 1
    assert only(families["kops_last_run_planned_moves"], kind="replica") == 0


def test_a_metrics_file_that_cannot_be_written_is_refused_before_anything_is_done(tmp_path: Path, capsys) -> None:
    prom = tmp_path / "no-such-folder" / "kops.prom"
    assert main(["rebalance", "-b", "127.0.0.1:1", "--metrics-file", str(prom)]) == 1
    assert "cannot write the metrics file here" in capsys.readouterr().err and not prom.parent.exists()
