"""Cordoning what a drain empties (issue 37, KIP-1066; docs/design/jbod.md §7; kops/model/cordons.py,
kops/executor/cordons.py): a decommission's plan carries its cordons where the cluster's finalized
metadata.version is 4.3-IV0 or later and a warning elsewhere; kops apply sets `cordoned.log.dirs` on the drained
broker before the first batch (an operator's value kept in the record), a kill -9 at any write resumes to the same
end, and the rollback restores what was found before its batches. Against the in-memory cluster, which refuses
the config below 4.3-IV0 as Kafka's controller does. On real Kafka 4.3: tests/integration/test_jbod_real.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kops.errors import ExitCode, KopsError
from kops.executor.events import BatchStarted, Event, Message, Step
from kops.model import plan_format
from kops.model.cordons import CORDON_LEVEL, CORDONED_LOG_DIRS, cordoned, drained, merged, metadata_level
from kops.model.partitions import TopicPartition
from kops.model.plan import Cordon
from kops.planner.markdown import render_markdown
from tests.memory_cluster import MemoryCluster
from tests.unit.test_executor_memory import DIGEST, Bed, bed
from tests.unit.test_markdown_disk_moves import text_of

DECOMMISSIONED = (3,)  # what test_executor_memory's bed decommissions
WARNING = "new topics may still land on broker 3 while it drains (cordoning needs metadata.version 4.3-IV0)"


def drain(tmp_path: Path, level: int | None = CORDON_LEVEL) -> Bed:
    """test_executor_memory's bed (broker 3 decommissioned) on a cluster at `level`, its plan cordoned as kops
    plan makes it there."""
    b = bed(tmp_path)
    b.kafka.metadata_level = level
    b.plan = cordoned(b.plan, drained(DECOMMISSIONED), MemoryCluster(b.kafka).snapshot().metadata_version)
    return b


def cordon_of(b: Bed, broker: int = 3) -> str | None:
    return b.kafka.read_config("brokers", str(broker)).get(CORDONED_LOG_DIRS)


def test_the_plan_cordons_where_the_metadata_version_allows_and_warns_elsewhere(tmp_path: Path) -> None:
    at_43 = drain(tmp_path).plan
    assert at_43.cordons == (Cordon(3, ("*",)),) and WARNING not in at_43.warnings
    assert plan_format.loads(plan_format.dumps(at_43), "p.json").cordons == at_43.cordons  # sealed in `changes`
    for level in (CORDON_LEVEL - 1, None):  # 4.2-IV1, and none finalized (ZooKeeper mode, offline)
        below = drain(tmp_path, level).plan
        assert below.cordons == () and WARNING in below.warnings
    assert b"cordons" not in plan_format.dumps(drain(tmp_path, None).plan)  # absent when none
    unmoved = replace(at_43, batches=())
    assert cordoned(unmoved, {3: ("*",)}, CORDON_LEVEL) is unmoved  # nothing drains: nothing to cordon


def test_the_text_and_markdown_say_what_is_cordoned(tmp_path: Path) -> None:
    plan = drain(tmp_path).plan
    said = "Cordoned before batch 1 (cordoned.log.dirs, no new replica lands there): broker 3 (*); the rollback " \
           "restores the value found."
    assert f"> [!NOTE]\n> {said}" in render_markdown(plan) and said in text_of(plan)
    below = drain(tmp_path, None).plan
    assert "Cordoned" not in render_markdown(below) and f"> - {WARNING}" in render_markdown(below)
    assert WARNING in text_of(below) and "Cordoned" not in text_of(below)


def test_which_dirs_and_the_value_written() -> None:
    assert metadata_level({"metadata.version": "30"}) == 30 and metadata_level({"transport": "ZooKeeper"}) is None
    assert drained([3], {2: ["/d/b", "/d/a", "/d/b"], 3: ["/d/x"]}) == {2: ("/d/a", "/d/b"), 3: ("*",)}
    assert merged(None, ("*",)) == "*" and merged("/d/a", ("/d/b",)) == "/d/a,/d/b"
    assert merged("/d/a, /d/b", ("/d/b",)) == "/d/a,/d/b" and merged("*", ("/d/b",)) == "*"
    warned = cordoned(drain(Path("."), None).plan, {2: ("/d/a", "/d/b")}, 29).warnings[-1]
    assert warned == "new topics may still land on /d/a, /d/b of broker 2 while it drains (cordoning needs " \
                     "metadata.version 4.3-IV0)"


def test_apply_cordons_the_drained_broker_before_its_first_batch_and_rollback_restores_it(tmp_path: Path) -> None:
    b = drain(tmp_path)
    b.kafka.alter_config("brokers", "3", {CORDONED_LOG_DIRS: "/var/lib/kafka/data"})  # an operator's cordon
    seen: list[str | None] = []
    b.on_event = lambda e: seen.append(cordon_of(b)) if isinstance(e, BatchStarted) else None
    assert b.apply().exit_code == ExitCode.OK
    assert seen and set(seen) == {"*"}  # from the first batch on
    assert cordon_of(b) == "*"  # the drained broker stays cordoned
    [found] = b.record().cordons
    assert (found.broker, found.before, found.after) == (3, "/var/lib/kafka/data", "*")
    assert any(isinstance(e, Step) and e.text == "cordoned broker 3: cordoned.log.dirs=*" for e in b.events)
    before_batches: list[str | None] = []
    b.on_event = lambda e: before_batches.append(cordon_of(b)) if isinstance(e, BatchStarted) else None
    outcome = b.executor().rollback(b.path, DIGEST, b.plan.cluster_id)
    assert outcome.exit_code == ExitCode.OK, outcome.reason
    assert cordon_of(b) == "/var/lib/kafka/data" and set(before_batches) == {"/var/lib/kafka/data"}


def test_a_rollback_removes_a_cordon_that_was_not_there_and_leaves_one_changed_since(tmp_path: Path) -> None:
    b = drain(tmp_path)
    assert b.apply().exit_code == ExitCode.OK
    assert b.executor().rollback(b.path, DIGEST, b.plan.cluster_id).exit_code == ExitCode.OK
    assert cordon_of(b) is None
    changed = drain(tmp_path / "changed")
    assert changed.apply().exit_code == ExitCode.OK
    changed.kafka.alter_config("brokers", "3", {CORDONED_LOG_DIRS: "/somewhere/else"})
    assert changed.executor().rollback(changed.path, DIGEST, changed.plan.cluster_id).exit_code == ExitCode.OK
    assert cordon_of(changed) == "/somewhere/else"
    assert any(isinstance(e, Message) and "left as it is" in e.text for e in changed.events)


def test_below_4_3_apply_writes_no_cordon_and_says_so(tmp_path: Path) -> None:
    b = drain(tmp_path)  # planned at 4.3-IV0 ...
    b.kafka.metadata_level = CORDON_LEVEL - 1  # ... applied where the controller would refuse it
    with pytest.raises(KopsError, match="InvalidConfigurationException"):
        b.kafka.alter_config("brokers", "3", {CORDONED_LOG_DIRS: "*"})  # as Kafka's controller refuses it
    assert b.apply().exit_code == ExitCode.OK
    assert cordon_of(b) is None and b.record().cordons == []
    said: list[Event] = [e for e in b.events if isinstance(e, Message) and "not cordoned" in e.text]
    assert said and "metadata.version 4.3-IV0, this cluster's is level 29" in said[0].text  # type: ignore[attr-defined]  # the first event said is a Message


def test_a_cordoned_dir_takes_no_new_replica_in_the_memory_cluster(tmp_path: Path) -> None:
    b = drain(tmp_path)
    b.kafka.dirs = {3: ("/d1", "/d2")}
    b.kafka.alter_config("brokers", "3", {CORDONED_LOG_DIRS: "/d1"})
    b.kafka.create_topic("fresh", {0: (3, 1)}, {})
    assert b.kafka.dir_of(TopicPartition("fresh", 0), 3) == "/d2"


def test_resume_after_a_crash_at_every_write_up_to_the_first_batch_cordons_once(tmp_path: Path) -> None:
    """kill -9 at each write until the first batch's reassignment: the resumed run ends cordoned, the record
    holding the value found before kops wrote anything (an operator's), and its rollback restores it."""
    probe = drain(tmp_path / "probe")
    port = MemoryCluster(probe.kafka)
    assert probe.apply(port).exit_code == ExitCode.OK
    first_submit = next(i for i, w in enumerate(port.writes) if w.startswith("submit")) + 1
    for n in range(1, first_submit + 1):
        b = drain(tmp_path / f"n{n}")
        b.kafka.alter_config("brokers", "3", {CORDONED_LOG_DIRS: "/ops"})
        b.crash_then_resume(n)
        assert cordon_of(b) == "*" and [(c.before, c.after) for c in b.record().cordons] == [("/ops", "*")], n
        assert b.executor().rollback(b.path, DIGEST, b.plan.cluster_id).exit_code == ExitCode.OK
        assert cordon_of(b) == "/ops", n
