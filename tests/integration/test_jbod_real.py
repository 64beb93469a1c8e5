"""Log dirs on real Kafka (issue 37, docs/design/jbod.md §9): one lab per engine, Kafka 4 (KRaft) and 3.9
(ZooKeeper mode), three brokers with two log dirs each (`kops lab up --log-dirs-per-broker 2`).

What `kops state -b` records of each replica's dir is what Kafka's own tool reports (LogDirsCommand from the
kafka-tools jar, what kafka-log-dirs.sh runs), the future replica of an intra-broker move in flight included:
the move is started with kafka-python's AlterReplicaLogDirs under a tight
`replica.alter.log.dirs.io.max.bytes.per.second`, so it is still copying while both read. Through ZooKeeper the
placement is unknown, and kops says so.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kops.cli.main import main
from kops.lab.kafka_client import admin_client, create_topics
from kops.model import plan_format
from kops.zk_layout.codecs.log_dirs import parse_log_dirs
from tests.engines import EngineLab, fill_real, require_real
from tests.kafka_reassign_tool import reassign_tool, verify_until_done
from tests.labtools import wait_until

pytestmark = pytest.mark.lab
LOG_DIRS_TOOL = "org.apache.kafka.tools.LogDirsCommand"
BROKERS = 3
TOPIC = "jbod"
LAYOUT = {p: ((p % 3) + 1, ((p + 1) % 3) + 1) for p in range(6)}
MOVING = 0  # the partition whose replica on broker 1 changes dir while the test reads
ALTER_THROTTLE = "replica.alter.log.dirs.io.max.bytes.per.second"
Row = tuple[str, int, int, str, bool]  # topic, partition, broker, path, future


@pytest.fixture(scope="module", params=["kafka-4", "kafka-3.9"])
def jbod_cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineLab]:
    """Three brokers of two log dirs each; Kafka 3.9 on the session's ZooKeeper under a chroot of its own."""
    engine = str(request.param)
    require_real(engine)
    from kops.lab.kafka_lab import KafkaLab

    lab = KafkaLab(tmp_path_factory.mktemp(f"jbod-{engine}"), detached=False)
    zookeeper = None
    if engine == "kafka-3.9":
        zookeeper = f"{request.getfixturevalue('zookeeper_server')}/jbod-{uuid.uuid4().hex[:8]}"
    state = lab.up(engine, brokers=BROKERS, zookeeper=zookeeper, log_dirs_per_broker=2)
    try:
        yield EngineLab(engine, lab, state.connect or "", state.bootstrap)
    finally:
        lab.down()
        assert not lab.pids_alive(), "a Kafka process survived lab.down()"


@pytest.fixture(scope="module")
def filled(jbod_cluster: EngineLab) -> EngineLab:
    """The topic, 256 KiB in each partition and 8 MiB in the one that moves: eight 1 MiB segments, each a fetch
    of the alter-log-dirs thread, which the throttle then holds back for its quota window (seconds)."""
    from kafka.admin import NewTopic

    from kops.lab.kafka_client import fill

    bootstrap = jbod_cluster.bootstrap
    assert bootstrap is not None
    create_topics(bootstrap, [NewTopic(TOPIC, replica_assignments={p: list(r) for p, r in LAYOUT.items()})])
    fill_real(bootstrap, {TOPIC: LAYOUT}, 0.25)
    fill(bootstrap, {TOPIC: {MOVING: 8 * 2**20}})
    return jbod_cluster


def kops_state(cluster: EngineLab, out: Path, *address: str) -> dict[str, Any]:
    assert main(["state", *(address or ("-b", str(cluster.bootstrap))), "--out", str(out)]) == 0
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def kops_rows(doc: dict[str, Any]) -> set[Row]:
    return {(t, p, b, path, future) for t, p, b, path, future in doc.get("replica_dirs", []) if t == TOPIC}


def tool_rows(cluster: EngineLab) -> tuple[set[Row], dict[int, set[str]]]:
    """Each replica's dir of the topic, and each broker's dirs, as Kafka's LogDirsCommand prints them."""
    lab = cluster.lab
    out = lab.run_tool(lab.distribution(), LOG_DIRS_TOOL, "--bootstrap-server", str(cluster.bootstrap),
                       "--describe", "--topic-list", TOPIC)
    report = parse_log_dirs(out, LOG_DIRS_TOOL)
    for broker in report.brokers:
        assert all(d.error is None for d in broker.log_dirs), broker
    rows = {(r.topic, r.partition, broker.broker, d.path, r.is_future)
            for broker in report.brokers for d in broker.log_dirs for r in d.replicas}
    return rows, {b.broker: {d.path for d in b.log_dirs} for b in report.brokers}


def start_dir_move(cluster: EngineLab, doc: dict[str, Any]) -> str:
    """Throttle broker 1's alter-log-dirs thread to 1 KiB/s, then move its replica of the moving partition to
    its other dir (kafka-python's AlterReplicaLogDirs); the dir it goes to."""
    from kafka.admin import ConfigResource
    from kafka.errors import NoError

    current = next(path for t, p, b, path, future in doc["replica_dirs"] if (t, p, b) == (TOPIC, MOVING, 1))
    target = next(str(d) for d in cluster.lab.log_dirs(1) if str(d) != current)
    with admin_client(str(cluster.bootstrap)) as client:
        client.alter_configs([ConfigResource("BROKER", "1", configs={ALTER_THROTTLE: ("SET", "1024")})],
                             incremental=True, raise_on_unknown=False)  # kafka-python does not list it
        answer = client.alter_replica_log_dirs({(TOPIC, MOVING, 1): target})
    assert list(answer.values()) == [NoError], answer
    return target


def test_kops_reads_each_replica_s_dir_as_kafka_s_own_tool_reports_it(filled: EngineLab, tmp_path: Path,
                                                                       capsys: Any) -> None:
    cluster = filled
    doc = kops_state(cluster, tmp_path / "before.json")
    assert doc["replica_dirs_read"] is True
    dirs = {b: {d["path"] for d in doc["log_dirs"] if d["broker"] == b} for b in range(1, BROKERS + 1)}
    assert dirs == {b: {str(d) for d in cluster.lab.log_dirs(b)} for b in dirs}
    before = kops_rows(doc)
    assert {(t, p, b) for t, p, b, _, _ in before} >= {(TOPIC, p, b) for p, r in LAYOUT.items() for b in r}
    used = {b: {path for _, _, broker, path, _ in before if broker == b} for b in dirs}
    assert any(len(paths) == 2 for paths in used.values()), f"no broker holds replicas in both dirs: {used}"
    tool, tool_dirs = tool_rows(cluster)
    assert before == tool
    assert tool_dirs == dirs

    target = start_dir_move(cluster, doc)
    moving = kops_rows(kops_state(cluster, tmp_path / "moving.json"))
    assert (TOPIC, MOVING, 1, target, True) in moving
    assert moving == tool_rows(cluster)[0]
    assert main(["state", "-b", str(cluster.bootstrap)]) == 0
    shown = capsys.readouterr().out
    assert "Log-dir moves in flight" in shown and f"{TOPIC}-{MOVING}" in shown


def test_through_zookeeper_the_placement_is_unknown_and_said(filled: EngineLab, tmp_path: Path,
                                                             capsys: Any) -> None:
    if not filled.zk_connect:
        pytest.skip("KRaft has no ZooKeeper")
    doc = kops_state(filled, tmp_path / "zk.json", "-z", filled.zk_connect)
    assert "replica_dirs_read" not in doc and "replica_dirs" not in doc
    assert main(["state", "-z", filled.zk_connect]) == 0
    assert "not read through ZooKeeper" in " ".join(capsys.readouterr().out.split())


def settled_dir(port: Any, tp: Any, broker: int, path: str) -> bool:
    """The replica is in `path` and no future replica is left (the move's swap done)."""
    copy = port.dir_copies([(tp, broker)]).get((tp, broker))
    return copy is not None and copy.path == path and not copy.moving


Wait = Callable[[Callable[[], bool], str], None]


def moves_between_dirs_and_places_one_a_reassignment_brings(port: Any, dirs_of: Callable[[int], list[str]],
                                                            wait: Wait) -> None:
    """The port's log-dir calls as Kafka answers them, on a cluster holding TOPIC as LAYOUT with two dirs per
    broker: a hosted replica moves to its broker's other dir (AlterReplicaLogDirs, then the swap); for a replica
    its broker does not host, the broker answers REPLICA_NOT_AVAILABLE and keeps the dir as preferred, so the
    replica a reassignment then brings is born there (docs/design/jbod.md §1); an unknown path is
    LOG_DIR_NOT_FOUND. Run over kops's Admin adapter on real Kafka (below) and over the memory cluster
    (tests/unit/test_executor_log_dirs.py), which the executor's fast tests run on."""
    from kops.model.partitions import TopicPartition

    tp = TopicPartition(TOPIC, 3)  # on brokers 1 and 2
    now = port.dir_copies([(tp, 2)])[(tp, 2)].path
    other = next(d for d in dirs_of(2) if d != now)
    assert port.alter_replica_dirs({(tp, 2): other}) == {(tp, 2): None}
    wait(lambda: settled_dir(port, tp, 2, other), f"{tp} on broker 2 in {other}")

    target = dirs_of(3)[1]  # made the fuller of broker 3's dirs, so Kafka would not pick it
    held = port.dir_copies([(TopicPartition(TOPIC, p), 3) for p, r in LAYOUT.items() if 3 in r])
    for (other_tp, _), copy in held.items():
        if copy.path != target:
            assert port.alter_replica_dirs({(other_tp, 3): target}) == {(other_tp, 3): None}
            wait(lambda t=other_tp: settled_dir(port, t, 3, target), f"{other_tp} in {target}")
    assert port.alter_replica_dirs({(tp, 3): target}) == {(tp, 3): "ReplicaNotAvailableError"}
    port.submit([(tp, (1, 2, 3))], port.snapshot())
    wait(lambda: settled_dir(port, tp, 3, target), f"{tp}'s new replica in {target}")
    assert port.alter_replica_dirs({(tp, 2): "/nowhere"}) == {(tp, 2): "LogDirNotFoundError"}


def test_kops_moves_a_replica_between_dirs_and_places_one_a_reassignment_brings(filled: EngineLab) -> None:
    from kops.cluster.admin.adapter import AdminCluster
    from kops.cluster.admin.connection import AdminSettings

    port = AdminCluster(AdminSettings(str(filled.bootstrap)))
    try:
        moves_between_dirs_and_places_one_a_reassignment_brings(
            port, lambda b: [str(d) for d in filled.lab.log_dirs(b)],
            lambda ready, what: wait_until(ready, timeout=60, what=what))
    finally:
        port.close()


def as_laid_out(cluster: EngineLab, partition: int, tmp_path: Path) -> None:
    """Put the partition back on LAYOUT's brokers if an earlier attempt of a test (a rerun) left it elsewhere."""
    doc = kops_state(cluster, tmp_path / "layout.json")
    held = {b for t, p, b, _, future in doc["replica_dirs"] if (t, p) == (TOPIC, partition) and not future}
    if held == set(LAYOUT[partition]):
        return
    back = tmp_path / "back.json"
    back.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": TOPIC, "partition": partition, "replicas": list(LAYOUT[partition])}]}))
    assert "Successfully started" in reassign_tool(cluster, "--execute", "--reassignment-json-file", str(back))
    verify_until_done(cluster, back)


def test_a_file_naming_dirs_imports_and_its_export_runs_with_kafka_s_tool(filled: EngineLab, tmp_path: Path) -> None:
    """`kops plan --import-kafka` of a file naming log dirs: partition 4 stays on (2, 3) with broker 2's replica
    to its other dir (a disk move), partition 5 goes from (3, 1) to (3, 2) with broker 2's new replica born in a
    named dir and broker 3's replica to its other dir. The plan holds both kinds; its export, run by Kafka's own
    kafka-reassign-partitions, leaves every replica in the dir the plan named (DescribeLogDirs, as kops state -b
    reads it). Broker 1 is left alone: the first test throttles its alter-log-dirs thread to 1 KiB/s."""
    cluster = filled
    as_laid_out(cluster, 5, tmp_path)
    now = {(p, b): path for t, p, b, path, future in kops_state(cluster, tmp_path / "before.json")["replica_dirs"]
           if t == TOPIC and not future}
    dirs = {b: [str(d) for d in cluster.lab.log_dirs(b)] for b in (2, 3)}
    other = {(p, b): next(d for d in dirs[b] if d != now[(p, b)]) for p, b in ((4, 2), (5, 3))}
    wanted = {"version": 1, "partitions": [
        {"topic": TOPIC, "partition": 4, "replicas": [2, 3], "log_dirs": [other[(4, 2)], "any"]},
        {"topic": TOPIC, "partition": 5, "replicas": [3, 2], "log_dirs": [other[(5, 3)], dirs[2][1]]},
    ]}
    given, plan_file, exported = tmp_path / "given.json", tmp_path / "plan.json", tmp_path / "export.json"
    given.write_text(json.dumps(wanted))
    assert main(["plan", "--import-kafka", str(given), "-b", str(cluster.bootstrap), "-o", str(plan_file),
                 "--export-kafka", str(exported), "--format", "json"]) == 0
    plan = plan_format.loads(plan_file.read_bytes(), str(plan_file))
    assert sorted((d.partition, d.broker, d.to_dir) for d in plan.disk_moves) == [
        (4, 2, other[(4, 2)]), (5, 3, other[(5, 3)])]
    assert [(m.partition, m.to_dirs) for m in plan.moves] == [(5, (None, dirs[2][1]))]
    assert json.loads(exported.read_text())["partitions"] == wanted["partitions"]

    out = reassign_tool(cluster, "--execute", "--reassignment-json-file", str(exported))
    assert "Successfully started" in out, out
    placed = {(e["partition"], b): d for e in wanted["partitions"] for b, d in zip(e["replicas"], e["log_dirs"])
              if d != "any"}

    def in_their_dirs() -> bool:
        rows = kops_rows(kops_state(cluster, tmp_path / "after.json"))
        return all((TOPIC, p, b, d, False) in rows and not any(r[4] and r[1:3] == (p, b) for r in rows)
                   for (p, b), d in placed.items())

    wait_until(in_their_dirs, timeout=120, what="every replica in the dir the plan named")
    verify_until_done(cluster, exported)  # broker 1 may still hold partition 5 while the new replica is placed



def test_kops_apply_puts_replicas_in_the_dirs_named_and_rollback_puts_them_back(filled: EngineLab, tmp_path: Path,
                                                                                capsys: Any) -> None:
    """`kops apply` of an imported plan with a disk move (partition 1's replica on broker 3 to its other dir) and a
    move whose new replica is placed (partition 2 from (3, 1) to (3, 2), broker 2's replica in its first dir):
    DescribeLogDirs then shows each in its dir, and `kops rollback` puts the replica back in the dir it was in and
    partition 2 back on (3, 1). On Kafka 3.9 reached through ZooKeeper the plan is refused first, asking for -b.
    Broker 1 only loses a replica: the first test throttles its alter-log-dirs thread to 1 KiB/s."""
    cluster = filled
    now = {(p, b): path for t, p, b, path, future in kops_state(cluster, tmp_path / "before.json")["replica_dirs"]
           if t == TOPIC and not future}
    before = now[(1, 3)]
    other = next(str(x) for x in cluster.lab.log_dirs(3) if str(x) != before)
    born = str(cluster.lab.log_dirs(2)[0])
    given, plan_file = tmp_path / "given.json", tmp_path / "plan.json"
    given.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": TOPIC, "partition": 1, "replicas": [2, 3], "log_dirs": ["any", other]},
        {"topic": TOPIC, "partition": 2, "replicas": [3, 2], "log_dirs": ["any", born]},
    ]}))
    bootstrap = str(cluster.bootstrap)
    assert main(["plan", "--import-kafka", str(given), "-b", bootstrap, "-o", str(plan_file), "--throttle",
                 "8MiB/s", "--format", "json"]) == 0
    if cluster.zk_connect:
        capsys.readouterr()
        assert main(["apply", str(plan_file), "-z", cluster.zk_connect, "--yes"]) == 1
        assert "-b BOOTSTRAP" in " ".join(capsys.readouterr().err.split())

    assert main(["apply", str(plan_file), "-b", bootstrap, "--yes", "--poll", "0.2"]) == 0
    rows = kops_rows(kops_state(cluster, tmp_path / "after.json"))
    assert (TOPIC, 1, 3, other, False) in rows and (TOPIC, 2, 2, born, False) in rows
    assert not any(future and p in (1, 2) for _, p, _, _, future in rows)
    assert {(p, b) for _, p, b, _, future in rows if p == 2 and not future} == {(2, 3), (2, 2)}

    assert main(["rollback", str(plan_file), "-b", bootstrap, "--yes", "--poll", "0.2"]) == 0
    rows = kops_rows(kops_state(cluster, tmp_path / "back.json"))
    assert (TOPIC, 1, 3, before, False) in rows
    assert not any(future and p in (1, 2) for _, p, _, _, future in rows)
    assert {(p, b) for _, p, b, _, future in rows if p == 2 and not future} == {(2, 3), (2, 1)}


def test_a_disk_move_resumes_after_kops_is_killed_mid_copy_and_rolls_back(filled: EngineLab, tmp_path: Path) -> None:
    """kill -9 of `kops apply` while broker 2's replica of the 8 MiB partition is copying to its other dir (its
    future replica listed), under a 1 MiB/s alter-log-dirs throttle: `kops apply --resume` follows the copy to its
    end and restores the throttle; `kops rollback` moves the replica back."""
    from kops.cluster.admin.adapter import AdminCluster
    from kops.cluster.admin.connection import AdminSettings
    from kops.model.partitions import TopicPartition
    from tests.integration.test_executor import kops

    cluster, bootstrap = filled, str(filled.bootstrap)
    tp = TopicPartition(TOPIC, MOVING)
    port = AdminCluster(AdminSettings(bootstrap))
    try:
        before = port.dir_copies([(tp, 2)])[(tp, 2)].path
        other = next(str(x) for x in cluster.lab.log_dirs(2) if str(x) != before)
        given, plan_file = tmp_path / "given.json", tmp_path / "plan.json"
        given.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": TOPIC, "partition": MOVING, "replicas": list(LAYOUT[MOVING]), "log_dirs": ["any", other]}]}))
        assert main(["plan", "--import-kafka", str(given), "-b", bootstrap, "-o", str(plan_file), "--throttle",
                     "1MiB/s", "--format", "json"]) == 0
        killed = kops("apply", str(plan_file), "-b", bootstrap, "--yes", "--format", "json", "--poll", "0.2",
                      "--session-timeout", "6")
        wait_until(lambda: port.dir_copies([(tp, 2)])[(tp, 2)].future_path == other, timeout=90,
                   what="the future replica copying")
        killed.kill()
        killed.wait()
        assert port.read_config("brokers", "2").get(ALTER_THROTTLE) == str(2**20)  # left behind by the kill
        assert main(["apply", "--resume", str(plan_file), "-b", bootstrap, "--yes", "--poll", "0.2"]) == 0
        assert settled_dir(port, tp, 2, other)
        assert ALTER_THROTTLE not in port.read_config("brokers", "2")
        assert main(["rollback", str(plan_file), "-b", bootstrap, "--yes", "--poll", "0.2"]) == 0
        assert settled_dir(port, tp, 2, before)
        assert ALTER_THROTTLE not in port.read_config("brokers", "2")
    finally:
        port.close()


def test_remove_log_dirs_planned_and_applied_empties_the_dir_and_rollback_refills_it(filled: EngineLab,
                                                                                     tmp_path: Path,
                                                                                     capsys: Any) -> None:
    """A playbook's `brokers: {remove_log_dirs: {3: [DIR]}}` (DIR: broker 3's dir holding most of its replicas),
    planned live through the Admin API and applied: DescribeLogDirs then lists no replica in DIR, every replica
    that was there is in broker 3's other dir (the dirs share the machine's filesystem, whose room the plan checks
    at a disk limit of 1.0), and `kops rollback` puts them back. On Kafka 3.9 planned through ZooKeeper the dirs
    and the placement are unknown and the plan is refused in one line asking for -b."""
    cluster, bootstrap = filled, str(filled.bootstrap)
    rows = kops_state(cluster, tmp_path / "before.json")["replica_dirs"]
    held = [(path, t, p) for t, p, b, path, future in rows if b == 3 and not future]
    removed = max(sorted({path for path, _, _ in held}), key=lambda d: sum(1 for path, _, _ in held if path == d))
    other = next(str(d) for d in cluster.lab.log_dirs(3) if str(d) != removed)
    leaving = {(t, p) for path, t, p in held if path == removed}
    assert leaving
    playbook, inventory, plan_file = tmp_path / "pb.yml", tmp_path / "inv.yml", tmp_path / "plan.json"
    playbook.write_text(f"- hosts: all\n  brokers: {{remove_log_dirs: {{3: [{removed}]}}}}\n"
                        "  execution: {throttle: 8MiB/s}\n")
    inventory.write_text(f"all:\n  hosts:\n    jbod:\n      bootstrap_servers: '{bootstrap}'\n"
                         "      capacity: {limits: {disk: 1.0}}\n")
    if cluster.zk_connect:
        through_zk = tmp_path / "zk.yml"
        through_zk.write_text(f"all:\n  hosts:\n    jbod:\n      zookeeper: '{cluster.zk_connect}'\n")
        capsys.readouterr()
        assert main(["plan", str(playbook), "-i", str(through_zk), "-o", str(tmp_path / "zk-plan.json")]) == 1
        said = " ".join(capsys.readouterr().err.split())
        assert "brokers.remove_log_dirs" in said and "broker 3" in said and "-b BOOTSTRAP" in said, said

    assert main(["plan", str(playbook), "-i", str(inventory), "-o", str(plan_file), "--format", "json"]) == 0
    planned = plan_format.loads(plan_file.read_bytes(), str(plan_file))
    assert {(m.topic, m.partition) for m in planned.disk_moves} == leaving and not planned.moves
    assert all((m.broker, m.from_dir, m.to_dir) == (3, removed, other) for m in planned.disk_moves)

    known = {(t, p) for t, p, *_ in rows}  # a topic created after the plan (kops's own record) may land in DIR
    try:
        assert main(["apply", str(plan_file), "-b", bootstrap, "--yes", "--poll", "0.2"]) == 0
        after = kops_state(cluster, tmp_path / "after.json")["replica_dirs"]
        assert not [row for row in after if row[2] == 3 and row[3] == removed and tuple(row[:2]) in known], after
        assert {(t, p) for t, p, b, path, future in after if b == 3 and path == other and not future} >= leaving
    finally:  # the lab stays as it was for the module's other tests (and a rerun), whatever failed
        assert main(["rollback", str(plan_file), "-b", bootstrap, "--yes", "--poll", "0.2"]) == 0
    back = kops_state(cluster, tmp_path / "back.json")["replica_dirs"]
    assert {(t, p) for t, p, b, path, future in back
            if b == 3 and path == removed and not future and (t, p) in known} == leaving


def test_a_drained_dir_is_cordoned_while_it_drains_and_uncordoned_by_the_rollback(filled: EngineLab,
                                                                                   tmp_path: Path) -> None:
    """KIP-1066 (Kafka 4.3): the lab formats its KRaft metadata at 4.3-IV0 (feature level 30, what `kops state -b`
    reads with DescribeFeatures), so a plan emptying broker 2's dir that holds the 8 MiB partition carries that
    dir as a cordon; while `kops apply` copies the partition out under a 1 MiB/s alter-log-dirs throttle, the
    broker's `cordoned.log.dirs` (DescribeConfigs) names the dir; it stays when the drain is done, and `kops
    rollback` removes it. On Kafka 3.9 (ZooKeeper mode: no metadata.version finalized) the plan has no cordon and
    says that new topics may still land there."""
    from kops.cluster.admin.adapter import AdminCluster
    from kops.cluster.admin.connection import AdminSettings
    from kops.model.cordons import CORDON_LEVEL, CORDONED_LOG_DIRS
    from kops.model.partitions import TopicPartition
    from tests.integration.test_executor import kops

    cluster, bootstrap = filled, str(filled.bootstrap)
    tp = TopicPartition(TOPIC, MOVING)
    level = kops_state(cluster, tmp_path / "before.json").get("metadata_version")
    port = AdminCluster(AdminSettings(bootstrap))
    try:
        drained = port.dir_copies([(tp, 2)])[(tp, 2)].path
        playbook, inventory, plan_file = tmp_path / "pb.yml", tmp_path / "inv.yml", tmp_path / "plan.json"
        playbook.write_text(f"- hosts: all\n  brokers: {{remove_log_dirs: {{2: [{drained}]}}}}\n"
                            "  execution: {throttle: 1MiB/s}\n")
        inventory.write_text(f"all:\n  hosts:\n    jbod:\n      bootstrap_servers: '{bootstrap}'\n"
                             "      capacity: {limits: {disk: 1.0}}\n")  # the dirs share one filesystem
        assert main(["plan", str(playbook), "-i", str(inventory), "-o", str(plan_file), "--format", "json"]) == 0
        plan = plan_format.loads(plan_file.read_bytes(), str(plan_file))
        assert (tp.topic, tp.partition, 2, drained) in {(m.topic, m.partition, m.broker, m.from_dir)
                                                        for m in plan.disk_moves}
        if cluster.zk_connect:
            assert level is None and plan.cordons == ()
            assert f"new topics may still land on {drained} of broker 2 while it drains (cordoning needs " \
                   f"metadata.version 4.3-IV0)" in plan.warnings
            return
        assert level is not None and level >= CORDON_LEVEL, level
        assert [(c.broker, c.dirs) for c in plan.cordons] == [(2, (drained,))]
        assert CORDONED_LOG_DIRS not in port.read_config("brokers", "2")

        applying = kops("apply", str(plan_file), "-b", bootstrap, "--yes", "--format", "json", "--poll", "0.2")
        wait_until(lambda: port.dir_copies([(tp, 2)])[(tp, 2)].future_path is not None, timeout=90,
                   what="the 8 MiB partition copying out of the drained dir")
        assert port.read_config("brokers", "2").get(CORDONED_LOG_DIRS) == drained  # while it drains
        out, err = applying.communicate(timeout=300)
        assert applying.returncode == 0, err
        assert any(json.loads(line).get("text") == f"cordoned broker 2: {CORDONED_LOG_DIRS}={drained}"
                   for line in out.splitlines() if line.startswith("{"))
        assert port.dir_copies([(tp, 2)])[(tp, 2)].path != drained
        assert port.read_config("brokers", "2").get(CORDONED_LOG_DIRS) == drained  # a drained dir stays cordoned

        assert main(["rollback", str(plan_file), "-b", bootstrap, "--yes", "--poll", "0.2"]) == 0
        assert CORDONED_LOG_DIRS not in port.read_config("brokers", "2")
        assert settled_dir(port, tp, 2, drained)
    finally:
        port.close()


LEDGER = {p: (3, p % 2 + 1) for p in range(3)}  # every partition with a replica on broker 3, whose dir is emptied


def test_no_acknowledged_record_is_lost_while_a_dir_is_emptied_under_produce_load(filled: EngineLab,
                                                                                 tmp_path: Path) -> None:
    """The issue's no-loss check for a disk removal: an acks=all idempotent producer (librdkafka, tests/delivery.py)
    writes numbered records to a topic with a replica of every partition on broker 3 (min.insync.replicas 2) while
    `kops apply` empties the dir of broker 3 holding most of them (remove_log_dirs: copies within the broker under
    the alter-log-dirs throttle, Kafka swapping each future replica in once it has caught up); a consumer then
    reads every partition back: nothing acknowledged is missing, none twice, order kept. Rolled back after."""
    from kafka.admin import NewTopic

    from tests.delivery import SequenceProducer, compare, read_back

    cluster, bootstrap = filled, str(filled.bootstrap)
    create_topics(bootstrap, [NewTopic("ledger", replica_assignments={p: list(r) for p, r in LEDGER.items()},
                                       topic_configs={"min.insync.replicas": "2"})])
    producer = SequenceProducer(bootstrap, "ledger", len(LEDGER), rate=300).start()
    plan_file = tmp_path / "plan.json"
    try:
        wait_until(lambda: producer.acks.count > 300, timeout=90, what="records acknowledged before the plan")
        rows = kops_state(cluster, tmp_path / "before.json")["replica_dirs"]
        mine = [path for t, _p, b, path, future in rows if t == "ledger" and b == 3 and not future]
        removed = max(sorted(set(mine)), key=mine.count)
        playbook, inventory = tmp_path / "pb.yml", tmp_path / "inv.yml"
        playbook.write_text(f"- hosts: all\n  brokers: {{remove_log_dirs: {{3: [{removed}]}}}}\n"
                            "  execution: {throttle: 1MiB/s}\n")
        inventory.write_text(f"all:\n  hosts:\n    jbod:\n      bootstrap_servers: '{bootstrap}'\n"
                             "      capacity: {limits: {disk: 1.0}}\n")  # the dirs share the machine's filesystem
        assert main(["plan", str(playbook), "-i", str(inventory), "-o", str(plan_file), "--format", "json"]) == 0
        planned = plan_format.loads(plan_file.read_bytes(), str(plan_file))
        assert {m.topic for m in planned.disk_moves} >= {"ledger"}, planned.disk_moves
        assert main(["apply", str(plan_file), "-b", bootstrap, "--yes", "--poll", "0.2"]) == 0
        after = kops_state(cluster, tmp_path / "after.json")["replica_dirs"]
        assert not [r for r in after if r[0] == "ledger" and r[2] == 3 and r[3] == removed], after
        wait_until(lambda: producer.acks.count > 600, timeout=90, what="records acknowledged after the apply")
    finally:
        acks = producer.stop()
        if plan_file.exists():  # the lab as it was for the module's other tests (and a rerun)
            assert main(["rollback", str(plan_file), "-b", bootstrap, "--yes", "--poll", "0.2"]) == 0
    assert acks.failed == 0, acks.first_error
    verdict = compare(acks, read_back(bootstrap, "ledger", len(LEDGER)))
    assert verdict.lost == 0 and verdict.duplicates == 0 and verdict.out_of_order == 0, verdict
