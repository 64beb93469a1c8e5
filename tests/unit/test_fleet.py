"""A fleet (docs/design/fleet.md): the selection of clusters with their own client properties, serial and the
failure budget, the exit codes over a fleet, the fleet record, and `kops plan` over a fleet offline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kops.cli.connection import Connection, open_cluster, resolve
from kops.cli.fleet_apply import Meter
from kops.cli.main import main
from kops.cli.options import OutputFormat
from kops.errors import DocumentError, ExitCode, UsageError
from kops.fleet import progress, record, results, schedule, selection
from kops.fleet.record import Entry, FleetRecord
from kops.fleet.results import ClusterResult

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "create"

INVENTORY = """\
all:
  children:
    prod:
      children:
        eu:
          hosts:
            prod-eu:
              bootstrap_servers: eu1:9092,eu2:9092
              command_config: secrets/eu.properties
        us:
          hosts:
            prod-us:
              zookeeper: 127.0.0.1:2181/us
    staging:
      hosts:
        staging:
          bootstrap_servers: st:9092
          command_config: /etc/kops/staging.properties
"""


@pytest.fixture
def inventory(tmp_path: Path) -> Path:
    path = tmp_path / "inv" / "hosts.yml"
    path.parent.mkdir()
    path.write_text(INVENTORY)
    return path


@pytest.mark.parametrize(("limit", "names"), [
    ("prod", ["prod-eu", "prod-us"]), ("prod-*", ["prod-eu", "prod-us"]), ("prod-us,staging", ["prod-us", "staging"]),
    (None, ["prod-eu", "prod-us", "staging"]), ("all:!eu", ["prod-us", "staging"]), ("eu", ["prod-eu"]),
])
def test_a_limit_selects_a_group_a_pattern_a_list_or_all(inventory: Path, limit: str | None,
                                                         names: list[str]) -> None:
    assert [m.name for m in selection.select(inventory, limit)] == names


def test_each_cluster_has_its_address_and_its_own_client_properties(inventory: Path) -> None:
    members = {m.name: m for m in selection.select(inventory, None)}
    assert members["prod-eu"] == selection.Member("prod-eu", "kafka://eu1:9092,eu2:9092",
                                                   inventory.parent / "secrets/eu.properties")
    assert members["prod-us"] == selection.Member("prod-us", "127.0.0.1:2181/us", None)
    assert members["staging"].command_config == Path("/etc/kops/staging.properties")


def test_a_limit_selecting_nothing_and_a_bad_command_config_are_one_line(inventory: Path) -> None:
    with pytest.raises(UsageError, match="selects no cluster"):
        selection.select(inventory, "nowhere")
    inventory.write_text(INVENTORY.replace("command_config: secrets/eu.properties", "command_config: [1]"))
    with pytest.raises(UsageError, match="command_config must be a path"):
        selection.select(inventory, "eu")


def test_one_cluster_from_the_inventory_takes_its_command_config(inventory: Path, tmp_path: Path) -> None:
    """`-i INV -l CLUSTER`: the host's client properties are used, unless --command-config is given."""
    address = resolve(Connection(), inventory, "prod-eu")
    assert address.command_config == inventory.parent / "secrets/eu.properties"
    properties = inventory.parent / "secrets" / "eu.properties"
    properties.parent.mkdir()
    properties.write_text("security.protocol=NOPE\n")
    with pytest.raises(UsageError, match="security.protocol"), open_cluster(Connection(), address):
        pass


@pytest.mark.parametrize(("value", "fleet", "expected"), [
    (None, 4, 4), ("1", 4, 1), (2, 4, 2), ("9", 4, 4), ("25%", 4, 1), ("50%", 5, 2), ("10%", 3, 1), ("100%", 3, 3),
])
def test_serial_is_a_count_or_a_percentage_of_the_fleet(value: str | int | None, fleet: int, expected: int) -> None:
    assert schedule.parse_serial(value, fleet) == expected


@pytest.mark.parametrize("value", ["0", "-1", "x", "150%", "1.5"])
def test_a_bad_serial_is_refused(value: str) -> None:
    with pytest.raises(UsageError, match="serial"):
        schedule.parse_serial(value, 3)


def test_batches_and_the_failure_budget() -> None:
    assert schedule.batches(["a", "b", "c"], 2) == [["a", "b"], ["c"]]
    assert schedule.budget_exceeded(1, 10, 0)  # the default: the first failure stops the fleet
    assert not schedule.budget_exceeded(0, 10, 0)
    assert not schedule.budget_exceeded(2, 10, 20) and schedule.budget_exceeded(3, 10, 20)
    with pytest.raises(UsageError):
        schedule.check_percentage(101)


def _result(name: str, status: str, code: int = 0) -> ClusterResult:
    return ClusterResult(name, status, code)


def test_the_fleet_exit_code_is_the_first_cluster_that_did_not_finish() -> None:
    assert results.fleet_exit([_result("a", "ok"), _result("b", "changed")]) == ExitCode.OK
    assert results.fleet_exit([_result("a", "changed"), _result("b", "stopped", 3),
                               _result("c", "failed", 5)]) == ExitCode.STOPPED
    assert results.fleet_exit([_result("a", "failed", 4), _result("b", "skipped")]) == ExitCode.STALE
    assert results.status_of(0, True) == "changed" and results.status_of(3, True) == "stopped"
    assert results.status_of(5, True) == "failed" and results.status_of(0, False) == "ok"


def test_plan_exit_codes_over_a_fleet() -> None:
    assert results.plan_exit([False, False], 0, True) == ExitCode.OK
    assert results.plan_exit([False, True], 0, True) == ExitCode.CHANGES
    assert results.plan_exit([False, True], 0, False) == ExitCode.OK
    assert results.plan_exit([True], 1, True) == ExitCode.ERROR


def test_the_recap_totals() -> None:
    found = [ClusterResult("a", "changed", moves=3, bytes=10), _result("b", "failed", 1), _result("c", "skipped")]
    assert results.totals(found) == {"ok": 0, "changed": 1, "stopped": 0, "failed": 1, "skipped": 1, "moves": 3,
                                     "bytes": 10}


def test_the_fleet_record_round_trips_and_decides_what_resume_does() -> None:
    fleet = record.FleetRecord("apply", 1, 0.0, (record.Entry("a", "a.plan.json", "d1"),
                                                 record.Entry("b", "b.plan.json", "d2")))
    fleet = fleet.ended(ClusterResult("a", "stopped", 3, "a broker is down", "20261126T000000Z-d1-apply"))
    assert record.loads(record.dumps(fleet), "fleet.json") == fleet
    assert record.resume_mode(fleet.entry("a")) == "resume"
    assert record.resume_mode(fleet.entry("b")) == "start"
    done = fleet.ended(ClusterResult("a", "changed", 0, None, None))
    assert record.resume_mode(done.entry("a")) is None
    assert done.entry("a").execution == "20261126T000000Z-d1-apply"  # a result without one keeps the name
    assert [e.cluster for e in record.started(done)] == ["a"]
    assert record.cluster_of("prod-eu.plan.json") == "prod-eu"


@pytest.mark.parametrize("data", [b"{", b"[]", b'{"format": "kops-fleet/1"}',
                                  b'{"format": "kops-fleet/1", "kind": "apply", "serial": 1, '
                                  b'"max_fail_percentage": 0, "clusters": [{"cluster": "a", "plan": "p", '
                                  b'"digest": "d", "status": "happy"}]}'])
def test_a_damaged_fleet_record_is_one_line(data: bytes) -> None:
    with pytest.raises(DocumentError):
        record.loads(data, "fleet.json")


# -- kops plan over a fleet, offline ------------------------------------------------------------------------

PLAYBOOK = """\
- name: events in europe
  hosts: eu
  topics:
    - name: events
      partitions: 6
      replication_factor: 3
- name: nothing in the us
  hosts: us
  topics: []
"""


@pytest.fixture
def fleet_files(inventory: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    playbook = tmp_path / "playbook.yml"
    playbook.write_text(PLAYBOOK)
    snaps = tmp_path / "snaps"
    snaps.mkdir()
    for name in ("prod-eu", "prod-us"):
        shutil.copy(GOLDEN / "snapshot.json", snaps / f"{name}.json")
    return playbook, inventory, snaps


def test_plan_over_a_fleet_writes_a_plan_per_cluster_and_exits_2_when_one_changes(
        fleet_files: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    playbook, inventory, snaps = fleet_files
    out = tmp_path / "plans"
    args = ["plan", str(playbook), "-i", str(inventory), "-l", "prod", "--snapshot-dir", str(snaps), "--out-dir",
            str(out), "--detailed-exitcode"]
    assert main(args) == ExitCode.CHANGES, capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["prod-eu.plan.json", "prod-us.plan.json"]
    assert json.loads((out / "prod-eu.plan.json").read_text())["cluster"] == "prod-eu"
    text = capsys.readouterr().out
    assert "PLAN RECAP" in text and "prod-eu" in text and "changed" in text
    assert main([*args[:5], "us", *args[6:]]) == ExitCode.OK  # the us alone: nothing changes


def test_plan_over_a_fleet_in_markdown_and_json(fleet_files: tuple[Path, Path, Path], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    playbook, inventory, snaps = fleet_files
    out = tmp_path / "plans"
    base = ["plan", str(playbook), "-i", str(inventory), "-l", "prod", "--snapshot-dir", str(snaps)]
    assert main([*base, "--out-dir", str(out), "--format", "markdown"]) == 0
    markdown = capsys.readouterr().out
    assert markdown.index("| `prod-eu` | changes |") < markdown.index("### kops plan for `prod-eu`")
    assert (out / "prod-eu.md").read_text().startswith("### kops plan for `prod-eu`")
    assert main([*base, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [c["status"] for c in document["clusters"]] == ["changed", "ok"]
    assert document["total"]["changed"] == 1


def test_a_cluster_that_fails_is_named_and_the_others_are_still_planned(
        fleet_files: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    playbook, inventory, snaps = fleet_files
    (snaps / "prod-us.json").unlink()
    out = tmp_path / "plans"
    assert main(["plan", str(playbook), "-i", str(inventory), "-l", "prod", "--snapshot-dir", str(snaps),
                 "--out-dir", str(out), "--detailed-exitcode"]) == ExitCode.ERROR
    assert "prod-us: " in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["prod-eu.plan.json"]


def test_several_clusters_without_out_dir_say_how_to_plan_them_all(
        fleet_files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    playbook, inventory, _snaps = fleet_files
    assert main(["plan", str(playbook), "-i", str(inventory), "-l", "prod"]) == 1
    assert "--out-dir DIR" in capsys.readouterr().err


# -- kops apply DIR and kops rollback DIR: what is refused before any cluster is reached ---------------------

@pytest.fixture
def plans(fleet_files: tuple[Path, Path, Path], tmp_path: Path) -> Path:
    playbook, inventory, snaps = fleet_files
    out = tmp_path / "plans"
    assert main(["plan", str(playbook), "-i", str(inventory), "-l", "prod", "--snapshot-dir", str(snaps),
                 "--out-dir", str(out)]) == 0
    return out


def test_a_folder_without_plans_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["apply", str(tmp_path), "--yes"]) == 1
    assert "no *.plan.json here" in capsys.readouterr().err


def test_a_fleet_record_decides_between_resume_and_a_fresh_apply(plans: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["apply", str(plans), "--yes", "--resume"]) == 1
    assert "no fleet record to resume" in capsys.readouterr().err
    assert main(["rollback", str(plans), "--yes"]) == 1
    assert "nothing of this folder was applied" in capsys.readouterr().err
    fleet = record.FleetRecord("apply", 1, 0.0, (record.Entry("prod-eu", "prod-eu.plan.json", "0" * 16),
                                                 record.Entry("prod-us", "prod-us.plan.json", "0" * 16)))
    (plans / record.NAME).write_bytes(record.dumps(fleet))
    assert main(["apply", str(plans), "--yes"]) == 1
    assert "applied before" in capsys.readouterr().err
    assert main(["apply", str(plans), "--yes", "--resume"]) == 1
    assert "prod-eu: the plan changed since the fleet record was written" in capsys.readouterr().err


def test_a_bad_serial_for_a_fleet_is_one_line(plans: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["apply", str(plans), "--yes", "--serial", "0"]) == 1
    assert "serial" in capsys.readouterr().err


def test_the_play_s_serial_is_carried_by_the_plans(fleet_files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    playbook, inventory, snaps = fleet_files
    playbook.write_text(PLAYBOOK.replace("  hosts: eu\n", "  hosts: eu\n  serial: 25%\n"))
    out = tmp_path / "plans"
    assert main(["plan", str(playbook), "-i", str(inventory), "-l", "prod", "--snapshot-dir", str(snaps),
                 "--out-dir", str(out)]) == 0
    assert json.loads((out / "prod-eu.plan.json").read_text())["serial"] == "25%"
    assert "serial" not in json.loads((out / "prod-us.plan.json").read_text())  # absent when not declared


@pytest.mark.parametrize("value", ["0", "x", "150%", "true"])
def test_a_bad_play_serial_is_a_problem_at_its_line(fleet_files: tuple[Path, Path, Path], value: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    playbook, inventory, _snaps = fleet_files
    playbook.write_text(PLAYBOOK.replace("  hosts: eu\n", f"  hosts: eu\n  serial: {value}\n"))
    assert main(["validate", str(playbook), "-i", str(inventory)]) == 1
    assert f"{playbook}:3:" in capsys.readouterr().err


def test_the_example_workflow_plans_the_whole_inventory(fleet_files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """docs/examples/kops-review.yml's fleet job: its plan step's script, run with bash as GitHub would."""
    import os
    import subprocess
    import sys

    import yaml

    playbook, inventory, snaps = fleet_files
    workflow = Path(__file__).resolve().parents[2] / "docs" / "examples" / "kops-review.yml"
    script = next(s["run"] for s in yaml.safe_load(workflow.read_text())["jobs"]["fleet"]["steps"]
                  if s.get("id") == "fleet-plan")
    env = dict(os.environ, PLAYBOOK=str(playbook), INVENTORY=str(inventory), SNAPSHOTS=str(snaps),
               GITHUB_OUTPUT=str(tmp_path / "github-output"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "fleet.md").read_text().startswith("## kops plan for 2 cluster(s): 1 with changes")
    assert "changes=true" in (tmp_path / "github-output").read_text()
    assert sorted(p.name for p in (tmp_path / "plans").iterdir()) == ["prod-eu.md", "prod-eu.plan.json",
                                                                       "prod-us.md", "prod-us.plan.json"]


def test_one_cluster_s_files_are_refused_for_a_fleet(fleet_files: tuple[Path, Path, Path], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    playbook, inventory, snaps = fleet_files
    assert main(["plan", str(playbook), "-i", str(inventory), "-l", "prod", "--snapshot-dir", str(snaps),
                 "-o", str(tmp_path / "one.json")]) == 1
    assert "a fleet writes into --out-dir" in capsys.readouterr().err


def test_a_cluster_s_events_are_prefixed_with_its_name(capsys: pytest.CaptureFixture[str]) -> None:
    from kops.cli.console import reset
    from kops.cli.fleet_apply import ClusterReporter
    from kops.cli.options import OutputFormat
    from kops.executor.events import Message

    reset()
    ClusterReporter("prod-eu", OutputFormat.text)(Message("batch 1/2: 3/5 partitions, ETA 40 s"))
    assert capsys.readouterr().out == "prod-eu: batch 1/2: 3/5 partitions, ETA 40 s\n"
    ClusterReporter("prod-eu", OutputFormat.json)(Message("hello"))
    line = json.loads(capsys.readouterr().out)
    assert line["cluster"] == "prod-eu" and line["event"] == "message"


# -- kops rebalance --out-dir DIR --apply: the fleet's rules before any cluster is reached -------------------

def test_rebalance_applies_a_fleet_only_into_a_folder_of_its_own(plans: Path, inventory: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    base = ["rebalance", "-i", str(inventory), "-l", "prod", "--yes"]
    assert main([*base, "--serial", "1"]) == 1  # a fleet's options without a fleet to apply
    assert "--serial and --max-fail-percentage apply a fleet" in capsys.readouterr().err
    assert main([*base, "--out-dir", str(plans), "--apply"]) == 1  # an earlier run's plans are never applied again
    assert "prod-eu.plan.json, prod-us.plan.json" in capsys.readouterr().err


def test_a_rebalanced_fleet_is_applied_only_within_its_failure_budget(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from kops.cli.fleet_apply import FleetRun
    from kops.cli.fleet_rebalance import apply_rebalanced
    from kops.cli.options import OutputFormat

    def run(percentage: float) -> FleetRun:
        return FleetRun(tmp_path, Connection(), None, OutputFormat.text, False, max_fail_percentage=percentage)

    refused = ClusterResult("a", results.STOPPED, ExitCode.STOPPED, "busy")
    changed, ok = ClusterResult("b", results.CHANGED), ClusterResult("c", results.OK)
    settings = (None, lambda _plan: None)
    assert apply_rebalanced(run(0), [refused, changed], settings, lambda _plan: 1.0) == ExitCode.ERROR
    assert "not applying: 1 of 2 cluster(s) could not be planned" in capsys.readouterr().err
    assert apply_rebalanced(run(50), [refused, ok], settings, lambda _plan: 1.0) == ExitCode.ERROR
    assert apply_rebalanced(run(0), [ok], settings, lambda _plan: 1.0) == ExitCode.OK
    assert "no cluster is worth rebalancing" in capsys.readouterr().err
    assert not (tmp_path / record.NAME).exists()  # nothing applied, no record


# -- kops status and kops cancel over a fleet: one row per cluster, 1 when any cannot be reached -------------

UNREACHABLE = """\
all:
  children:
    prod:
      hosts:
        prod-eu: {bootstrap_servers: "127.0.0.1:1"}
        prod-us: {zookeeper: "127.0.0.1:2/us"}
"""


def test_status_over_a_fleet_names_each_cluster_and_its_place_in_the_record(
        plans: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inventory = tmp_path / "unreachable.yml"
    inventory.write_text(UNREACHABLE)
    fleet = record.FleetRecord("apply", 1, 0.0, (record.Entry("prod-eu", "prod-eu.plan.json", "0" * 16, "stopped"),
                                                 record.Entry("prod-us", "prod-us.plan.json", "0" * 16)))
    (plans / record.NAME).write_bytes(record.dumps(fleet))
    base = ["-i", str(inventory), "--connect-timeout", "1"]
    assert main(["status", str(plans), *base, "--format", "json"]) == ExitCode.ERROR
    captured = capsys.readouterr()
    rows = json.loads(captured.out)["clusters"]
    assert [(r["cluster"], r["fleet_status"]) for r in rows] == [("prod-eu", "stopped"), ("prod-us", "pending")]
    assert all(r["error"] for r in rows)
    assert main(["status", *base, "-l", "prod"]) == ExitCode.ERROR  # a limit selecting two clusters is a fleet
    captured = capsys.readouterr()
    assert "Fleet: 2 cluster(s)" in captured.out and "error: prod-us: 127.0.0.1:2/us" in captured.err
    assert main(["status", str(plans), "-b", "127.0.0.1:1"]) == ExitCode.ERROR
    assert "not -b/-z" in capsys.readouterr().err


def test_cancel_over_a_fleet_asks_each_cluster_and_stops_the_fleet_starting_more(
        plans: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inventory = tmp_path / "unreachable.yml"
    inventory.write_text(UNREACHABLE)
    assert main(["cancel", str(plans), "-i", str(inventory), "--connect-timeout", "1"]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "prod-eu: 127.0.0.1:1" in err and "prod-us: 127.0.0.1:2/us" in err
    assert (plans / record.CANCEL).exists()  # what `kops apply DIR` checks before starting a cluster


# -- the fleet's progress: bytes of all and an ETA over the schedule (kops/fleet/progress.py) ----------------

def test_the_fleet_eta_adds_each_batch_s_slowest_cluster() -> None:
    from kops.fleet.progress import Planned, Seen, bytes_done, fleet_eta

    planned = {"a": Planned(1000, 100.0), "b": Planned(4000, 400.0), "c": Planned(2000, 200.0),
               "d": Planned(0, None)}
    batches = [["a", "b"], ["c", "d"]]
    assert fleet_eta(batches, planned, {}, set()) == 400.0 + 200.0  # nothing seen yet: the plans' estimates
    seen = {"a": Seen(1000, 500, 10.0, 50.0), "b": Seen(4000, 1000, 30.0, 100.0)}
    # running: a 50 s, b 100 s, so 100; then c's 2000 bytes at the running clusters' mean rate (20/s): 100 s
    assert fleet_eta(batches, planned, seen, set()) == 100.0 + 100.0
    assert fleet_eta(batches, planned, seen, {"a", "b"}) == 100.0  # the first batch ended
    assert bytes_done(planned, seen, set()) == (1500, 7000)
    assert bytes_done(planned, seen, {"a"}) == (2000, 7000)
    seen["b"] = Seen(4000, 0, None, None)  # b has no rate yet: the fleet's ETA is unknown, not a guess
    assert fleet_eta(batches, planned, seen, set()) is None


def test_the_fleet_line_says_what_ended_what_runs_the_bytes_and_the_eta(capsys: pytest.CaptureFixture[str]) -> None:
    from kops.cli.console import reset
    from kops.cli.fleet_apply import Meter
    from kops.cli.options import OutputFormat
    from kops.executor.events import BatchProgressed
    from kops.fleet.progress import Planned

    reset()
    planned = {"a": Planned(1024, 10.0), "b": Planned(4096, 40.0)}
    fleet = record.FleetRecord("apply", 2, 0.0, (record.Entry("a", "a.plan.json", "0" * 16, "changed"),
                                                 record.Entry("b", "b.plan.json", "0" * 16, "running")))
    meter = Meter([["a", "b"]], planned, OutputFormat.text, every=0.0)
    meter.observer("b", lambda: fleet)(BatchProgressed(1, 2, 3, 1, 4096, 1024, 5.0, 100.0, 30.0, 4096, 1024, 30.0))
    meter.say(fleet, ClusterResult("a", results.CHANGED))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "fleet: 1/2 cluster(s) finished, running: b; 1.0 KiB/5.0 KiB; ETA 30 s"
    assert lines[1] == "fleet: a changed; 1/2 cluster(s) finished, running: b; 2.0 KiB/5.0 KiB; ETA 30 s"
    Meter([["a", "b"]], planned, OutputFormat.json).say(fleet, None)
    event = json.loads(capsys.readouterr().out)
    assert event == {"event": "fleet_progress", "finished": 1, "clusters": 2, "running": ["b"], "bytes_done": 0,
                     "bytes_total": 5120, "eta": 40.0}


def test_rebalance_of_several_clusters_without_out_dir_gets_a_folder_of_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    inventory = tmp_path / "unreachable.yml"
    inventory.write_text(UNREACHABLE)
    assert main(["rebalance", "-i", str(inventory), "-l", "prod", "--connect-timeout", "1", "--apply", "--yes",
                 "--serial", "1"]) == ExitCode.ERROR
    captured = capsys.readouterr()
    assert f"their plans go to {tmp_path / 'state' / 'kops' / 'rebalance' / 'fleet-prod-'}" in captured.err
    assert "not applying: 2 of 2 cluster(s) could not be planned" in captured.err  # none reached: nothing applied
    assert "REBALANCE RECAP" in captured.out
    assert main(["rebalance", "-i", str(inventory), "-l", "prod", "--heal-after", "30m"]) == ExitCode.ERROR
    assert "--heal-after heals one cluster at a time" in capsys.readouterr().err  # not a fleet folder by default


def test_the_fleet_line_counts_a_failed_clusters_bytes_as_reported_not_as_planned(capsys) -> None:
    """An outside check saw `fleet: a-zk failed; 0/2 cluster(s) finished; 46.2 MiB/52.0 MiB`: the failed
    cluster's planned bytes counted as copied."""
    mib = 1024 * 1024
    meter = Meter([["a", "b"]], {"a": progress.Planned(46 * mib, 10.0), "b": progress.Planned(6 * mib, 2.0)},
                  OutputFormat.json)
    fleet = FleetRecord("apply", 2, 0.0, (Entry("a", "a.json", "d", "failed"), Entry("b", "b.json", "d", "changed")))
    meter.say(fleet, ClusterResult("a", "failed", 1, "boom"))
    meter.say(fleet, ClusterResult("b", "changed"))
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(line["bytes_done"], line["bytes_total"]) for line in lines] == [(0, 52 * mib), (6 * mib, 52 * mib)]
