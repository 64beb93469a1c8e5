"""`kops status` over the in-memory cluster (tests/memory_cluster.py) and snapshots built in code: an execution
whose process died is said to be interrupted, with what to run next, and an offline partition says what it
waits for in words true on a KRaft cluster with eligible leader replicas (KIP-966) too.

The real-Kafka read of the eligible leader replicas is tests/integration/test_admin_snapshot.py's.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kops.cli import console
from kops.cli.status import _collect, _offline, _render, offline_line
from kops.errors import ExitCode
from kops.executor.events import BatchProgressed, Event
from kops.executor.executor import Controls, Executor
from kops.executor.journal import Journal
from kops.model.desired import Execution
from kops.model.partitions import Partition, PartitionState
from kops.model.snapshot import EligibleLeaders, Snapshot
from kops.model.topics import Topic
from kops.planner.planner import plan as make_plan
from tests.builders import brokers, declare, snapshot, td
from tests.memory_cluster import LEASE, Crash, DrivenClock, MemoryCluster, MemoryKafka

MB = 1024 * 1024
DIGEST = "0123456789abcdef"


class Bed:
    """A memory cluster whose broker 3 is drained by a plan at 1 MiB/s (its first batch takes seconds)."""

    def __init__(self, tmp_path: Path) -> None:
        self.kafka = MemoryKafka(4, DrivenClock())
        self.kafka.create_topic("pay", {p: (1 + p % 3, 1 + (p + 1) % 3) for p in range(6)}, {})
        self.kafka.produce("pay", 4 * MB)
        port = MemoryCluster(self.kafka)
        desired = declare(td("pay", rf=2), decommission=[3], execution=Execution(throttle=MB, max_partitions=2))
        self.plan = make_plan(desired, port.snapshot(), port.sizes())
        assert len(self.plan.batches) >= 2
        self.path = str(tmp_path / "plan.json")

    def apply(self, port: MemoryCluster, on_event: Any = None, controls: Controls | None = None) -> ExitCode:
        executor = Executor(port, on_event or (lambda _e: None), controls, clock=self.kafka.clock,  # type: ignore[arg-type]  # the driven clock has Clock's three methods
                            poll_seconds=0.5)
        return executor.apply(self.plan, self.path, DIGEST).exit_code

    def status(self) -> dict[str, Any]:
        return _collect(MemoryCluster(self.kafka))


def at_first_progress(action: Any) -> Any:
    done: list[bool] = []

    def hook(event: Event) -> None:
        if not done and isinstance(event, BatchProgressed):
            done.append(True)
            action()
    return hook


def killed_mid_batch(bed: Bed) -> dict[str, Any]:
    """kill -9 of the apply while its first batch moves; what kops status said while it ran."""
    port = MemoryCluster(bed.kafka)
    seen: dict[str, Any] = {}

    def kill() -> None:
        seen.update(bed.status())
        port.crashed = True  # a dead process: no more heartbeats, no tombstone
        raise Crash("kill -9")

    with pytest.raises(Crash):
        bed.apply(port, at_first_progress(kill))
    return seen


@pytest.fixture
def text(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """kops status's text for a document, as a pipe shows it (wide: tmp paths are long)."""
    monkeypatch.setenv("COLUMNS", "1000")

    def render(doc: dict[str, Any]) -> str:
        capsys.readouterr()
        console.reset()
        _render(doc)
        return capsys.readouterr().out
    yield render
    console.reset()


def test_an_apply_killed_mid_batch_is_interrupted_once_its_lease_lapsed_with_the_next_steps(tmp_path: Path,
                                                                                             text: Any) -> None:
    bed = Bed(tmp_path)
    live = killed_mid_batch(bed)
    assert live["lock"] and live["execution"]["status"] == "running" and live["execution"]["next_steps"] == []
    assert "Current execution" in text(live)

    bed.kafka.clock.sleep(LEASE + 1)  # the dead kops's lease lapses
    doc = bed.status()
    execution = doc["execution"]
    assert doc["lock"] is None
    assert execution["status"] == "interrupted" and execution["batch"] == 1
    assert execution["next_steps"] == [f"kops apply {bed.path} --resume", f"kops rollback {bed.path}"]
    assert "batch_eta_seconds" not in execution and "stalled_seconds" not in execution  # nothing runs it
    record = Journal(MemoryCluster(bed.kafka).records()).load(execution["id"])
    assert record.status == "running", "the record is left as written: --resume and rollback read it"
    json.dumps(doc)  # --format json prints it

    shown = text(doc)
    assert "Running: no kops execution" in shown
    assert f"Last execution {execution['id']} (apply): interrupted (its process stopped before it finished)" in shown
    assert "running" not in shown.split("Running:", 1)[1]
    assert f"`kops apply {bed.path} --resume` continues it, or `kops rollback {bed.path}` undoes" in shown


def test_a_holder_whose_process_is_gone_runs_nothing_before_its_lease_lapses(tmp_path: Path, text: Any) -> None:
    bed = Bed(tmp_path)
    killed_mid_batch(bed)
    finished = subprocess.Popen(["true"])
    finished.wait()
    [claim] = bed.kafka.claims
    claim.holder["pid"] = finished.pid  # the killed kops ran here: its pid is gone
    doc = bed.status()
    assert doc["lock"]["execution"] == doc["execution"]["id"], "the lease is still the dead kops's"
    assert doc["execution"]["status"] == "interrupted" and doc["execution"]["next_steps"]
    shown = text(doc)
    assert "its process is gone: the lock lapses when its session or lease expires" in shown
    assert "Last execution" in shown and ": interrupted" in shown


def test_an_execution_stopped_at_a_checkpoint_says_what_continues_it(tmp_path: Path, text: Any) -> None:
    bed = Bed(tmp_path)
    controls = Controls()
    assert bed.apply(MemoryCluster(bed.kafka), at_first_progress(controls.stop.set), controls) == ExitCode.STOPPED
    execution = bed.status()["execution"]
    assert execution["status"] == "stopped" and execution["next_steps"][0] == f"kops apply {bed.path} --resume"
    assert "Next: `kops apply" in text(bed.status())


def test_an_interrupted_rollback_is_resumed_not_rolled_back(tmp_path: Path, text: Any) -> None:
    bed = Bed(tmp_path)
    killed_mid_batch(bed)
    bed.kafka.clock.sleep(LEASE + 1)
    records = MemoryCluster(bed.kafka).records()
    [execution_id] = records.ids()
    journal = Journal(records)
    record = journal.load(execution_id)
    journal.save(replace(record, id=execution_id.replace("apply", "rollback"), kind="rollback", of=execution_id))
    doc = bed.status()
    assert doc["execution"]["kind"] == "rollback" and doc["execution"]["status"] == "interrupted"
    assert doc["execution"]["next_steps"] == [f"kops rollback {bed.path} --resume"]
    assert f"`kops rollback {bed.path} --resume` finishes the rollback" in text(doc)


def test_a_finished_execution_has_no_next_step(tmp_path: Path) -> None:
    bed = Bed(tmp_path)
    assert bed.apply(MemoryCluster(bed.kafka)) == ExitCode.OK
    execution = bed.status()["execution"]
    assert execution["status"] == "done" and execution["next_steps"] == []


# -- offline partitions -------------------------------------------------------------------------------------

def leaderless(isr: tuple[int, ...], eligible: EligibleLeaders | None) -> Snapshot:
    """clicks-0 on brokers 2 and 3, both gone (as Kafka 4 shows it with brokers 2 and 3 killed)."""
    part = Partition((2, 3), state=PartitionState(-1, 3, isr, -1))
    live = tuple(b for b in brokers(4) if b.id not in (2, 3))
    return snapshot(live, [Topic("clicks", {0: part})], eligible_leaders=(eligible,) if eligible else ())


def line_of(snap: Snapshot) -> str:
    [row] = _offline(snap)
    return offline_line(row)


def test_an_empty_isr_with_an_eligible_leader_replica_waits_for_that_broker() -> None:
    snap = leaderless((), EligibleLeaders("clicks", 0, (2,), (2,)))
    [row] = _offline(snap)
    assert row["eligible_leaders"] == [2] and row["last_known_elr"] == [2] and row["isr"] == []
    line = offline_line(row)
    assert line == "clicks-0 has no live leader; it waits for broker 2 (an eligible leader replica) to return"
    several = line_of(leaderless((), EligibleLeaders("clicks", 0, (2, 3), ())))
    assert "waits for one of brokers 2, 3 (eligible leader replicas) to return" in several


def test_an_empty_isr_whose_eligible_replicas_were_not_read_says_so_and_where_kafka_shows_them() -> None:
    [row] = _offline(leaderless((), None))
    assert row["eligible_leaders"] is None and row["last_known_elr"] is None
    line = offline_line(row)
    assert "none recorded" not in line and "unclean" not in line
    assert "yet a replica outside it may be an eligible leader replica (KIP-966, KRaft)" in line
    assert "kops could not read them here" in line
    assert "`kafka-topics.sh --bootstrap-server SERVERS --describe --unavailable-partitions --topic clicks`" in line


def test_an_empty_isr_and_no_eligible_replica_recorded_is_said_as_kafka_records_it() -> None:
    line = line_of(leaderless((), EligibleLeaders("clicks", 0, (), (3,))))
    assert line.endswith("Kafka records no in-sync or eligible leader replica for it (last known: 3)")
    assert "unclean" not in line


def test_an_offline_partition_with_an_isr_waits_for_it_as_before(tmp_path: Path, text: Any) -> None:
    kafka = MemoryKafka(4, DrivenClock())
    kafka.create_topic("fragile", {0: (1, 2)}, {})
    kafka.stop_broker(2)
    kafka.stop_broker(1)  # the ISR keeps broker 1, the last in sync (no eligible leader replicas modelled)
    kafka.start_broker(2)
    doc = _collect(MemoryCluster(kafka))
    [row] = doc["offline"]
    assert row["isr"] == [1] and row["live_replicas"] == [2] and row["eligible_leaders"] is None
    shown = text(doc)
    assert ("fragile-0 has no live leader; it waits for an in-sync replica (1) to return; live replicas [2] are not "
            "in sync") in shown
    line = line_of(leaderless((3,), EligibleLeaders("clicks", 0, (2,), ())))
    assert "waits for an in-sync replica (3) or broker 2 (an eligible leader replica) to return" in line


def test_the_fleet_table_says_interrupted_while_a_dead_kops_still_holds_the_lock(tmp_path: Path, text: Any,
                                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                                  capsys: pytest.CaptureFixture[str]
                                                                                  ) -> None:
    """kops status over a fleet read 'running' wherever a lock was held, a dead kops's too (the lock lapses only
    when its lease expires)."""
    from kops.cli.fleet_status import _render as render_fleet

    bed = Bed(tmp_path)
    killed_mid_batch(bed)
    finished = subprocess.Popen(["true"])
    finished.wait()
    [claim] = bed.kafka.claims
    claim.holder["pid"] = finished.pid
    doc = bed.status()
    row = {"cluster": "pay", "fleet_status": None, "error": None} | doc
    capsys.readouterr()
    console.reset()
    render_fleet([row])
    shown = capsys.readouterr().out
    assert "interrupted" in shown and "running" not in shown, shown
