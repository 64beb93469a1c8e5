"""`kops plan` and the executor behind `kops apply` refuse an incomplete snapshot (exit 3) unless
--allow-incomplete; fenced brokers round-trip."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import replace
from pathlib import Path

import pytest

from kops.cli.main import main
from kops.errors import ExitCode, NotReady
from kops.model import snapshot_format
from kops.model.brokers import Broker
from kops.model.partitions import TopicPartition
from kops.model.snapshot import ControllerInfo, Problem, Snapshot
from tests.memory_cluster import MemoryCluster
from tests.unit.test_executor_memory import DIGEST, bed


def snapshot(problems: tuple[Problem, ...]) -> Snapshot:
    brokers = tuple(Broker(id=i, host="h", port=9092, endpoints=("PLAINTEXT://h:9092",)) for i in (1, 2, 3))
    return Snapshot(cluster_id="c", controller=ControllerInfo(1, None), brokers=brokers, topics={},
                    problems=problems, connect="kafka://h:9092", fenced=(4,))


def test_plan_refuses_an_incomplete_snapshot_unless_allowed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap = tmp_path / "snap.json"
    snap.write_bytes(snapshot_format.dumps(snapshot((Problem("metadata/orders", "the brokers disagree"),))))
    playbook = tmp_path / "pb.yml"
    playbook.write_text("- hosts: all\n  topics: [{name: orders, partitions: 3, replication_factor: 3}]\n")
    assert main(["plan", str(playbook), "--snapshot", str(snap)]) == 3
    assert "cluster metadata is still propagating" in capsys.readouterr().err
    assert main(["plan", str(playbook), "--snapshot", str(snap), "--allow-incomplete"]) == 0


def test_fenced_brokers_round_trip_and_are_not_live() -> None:
    loaded = snapshot_format.loads(snapshot_format.dumps(snapshot(())), "x")
    assert loaded.fenced == (4,) and 4 not in loaded.live_broker_ids and loaded.complete


class Propagating(MemoryCluster):
    """The memory cluster read while its brokers' views still disagree (what the Admin-API reader reports)."""

    def snapshot(self, only_topics: set[str] | None = None,
                 only_partitions: Collection[TopicPartition] | None = None,
                 progress: Callable[[str], None] | None = None) -> Snapshot:
        found = super().snapshot(only_topics, only_partitions, progress)
        return replace(found, problems=(Problem("metadata/pay", "the brokers disagree"),))


def test_apply_refuses_an_incomplete_snapshot_before_writing_anything_unless_allowed(tmp_path: Path) -> None:
    setup = bed(tmp_path)
    before = (setup.layout(), setup.throttles())
    executor = setup.executor(Propagating(setup.kafka))
    with pytest.raises(NotReady, match="cluster metadata is still propagating") as refused:
        executor.apply(setup.plan, setup.path, DIGEST)
    assert refused.value.exit_code == ExitCode.STOPPED
    assert (setup.layout(), setup.throttles()) == before and setup.record() is None
    outcome = setup.executor(Propagating(setup.kafka)).apply(setup.plan, setup.path, DIGEST, allow_incomplete=True)
    assert outcome.exit_code == ExitCode.OK
    setup.finished_as_planned()
