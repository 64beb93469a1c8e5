"""The planner's log dirs (issue 37, jbod.md §5): `brokers.remove_log_dirs` and the goal `disk_within_broker`."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kops.model.capacity import LogDirUsage
from kops.model.desired import BrokerChanges, Rebalance
from kops.model.partitions import TopicPartition
from kops.model.placement import ReplicaDir
from kops.model.plan import Plan
from kops.model.snapshot import Snapshot
from kops.planner.intra_broker import band
from kops.planner.planner import PlanningError, plan
from tests.builders import HERE, brokers, declare, round_robin, snapshot
from tests.simulate import apply_plan

GIB = 2**30
TOTAL = 10 * GIB


def jbod(held: dict[str, list[int]], sizes: dict[TopicPartition, int], other_dirs: bool = True) -> Snapshot:
    """Brokers 1-4 (racks r0-r2, r0); `orders` partitions 0..7 on [3, x, y]; broker 3's replicas in its dirs as
    `held` says (dir -> partitions); each of broker 3's dirs 10 GiB, usable what its replicas leave."""
    snap = snapshot(brokers(4), [round_robin("orders", 8, 3, [1, 2, 4])])
    topic = snap.topics["orders"]
    parts = {p: replace(part, replicas=(3, *part.replicas[:2])) for p, part in topic.partitions.items()}
    snap = replace(snap, topics={"orders": replace(topic, partitions=parts)})
    rows, usage = [], []
    for path, numbers in sorted(held.items()):
        rows += [ReplicaDir("orders", p, 3, path) for p in numbers]
        used = sum(sizes[TopicPartition("orders", p)] for p in numbers)
        usage.append(LogDirUsage(3, path, TOTAL, TOTAL - used))
    if other_dirs:
        usage += [LogDirUsage(b, "/data", 100 * GIB, 90 * GIB) for b in (1, 2, 4)]
    return replace(snap, log_dirs=tuple(usage), replica_dirs=tuple(rows), replica_dirs_read=True)


def removing(paths: dict[int, tuple[str, ...]], **kwargs):
    return replace(declare(**kwargs), brokers=BrokerChanges((), (), HERE, paths))


SIZES = {TopicPartition("orders", p): s * GIB for p, s in enumerate([3, 3, 1, 1, 2, 1, 1, 1])}


def test_a_removed_dir_empties_into_the_brokers_other_dirs_with_room_then_to_other_brokers() -> None:
    # /d1 holds 5 GiB of 10 (limit 8 GiB): of /d2's 3, 2 and 1 GiB... only 3 GiB more fit in /d1
    snap = jbod({"/d1": [0, 5, 6], "/d2": [1, 4, 7], "/d3": [2, 3]}, SIZES)
    result = plan(removing({3: ("/d2",)}), snap, SIZES)
    disk = {(m.partition, m.from_dir, m.to_dir) for m in result.disk_moves}
    assert all(frm == "/d2" and to in ("/d1", "/d3") for _p, frm, to in disk)
    assert {p for p, _f, _t in disk} == {1, 4, 7}  # 3 + 2 + 1 GiB: /d3 has 6 GiB of room, /d1 3 GiB
    assert not result.moves
    assert result.summary.disk_moves == 3 and result.summary.disk_bytes == 6 * GIB
    assert all(m.replicas == snap.partition(m.tp).replicas for m in result.disk_moves)
    assert all(m.reason == "remove log dir /d2 of broker 3" for m in result.disk_moves)
    back = result.rollback.batches[0].disk_moves
    assert {(m.partition, m.to_dir) for m in back} == {(1, "/d2"), (4, "/d2"), (7, "/d2")}


def test_what_the_other_dirs_cannot_hold_leaves_the_broker_and_lands_nowhere_near_the_removed_dir() -> None:
    snap = jbod({"/d1": [0, 1, 5], "/d2": [2, 3, 4, 6, 7]}, SIZES)  # /d1: 7 GiB of its 8 GiB limit
    result = plan(removing({3: ("/d2",)}), snap, SIZES)
    moved_off = {m.partition for m in result.moves}
    stayed = {m.partition for m in result.disk_moves}
    assert stayed and moved_off and stayed | moved_off == {2, 3, 4, 6, 7} and not stayed & moved_off
    assert sum(SIZES[TopicPartition("orders", p)] for p in stayed) <= GIB  # /d1 had 1 GiB of room
    for m in result.moves:
        assert 3 not in m.to_replicas and m.reason.startswith("remove log dir /d2 of broker 3")
    assert not any(m.to_dir == "/d2" for m in result.disk_moves)


@pytest.mark.parametrize(("paths", "snap_kwargs", "expected"), [
    ({3: ("/d9",)}, {}, "broker 3 has no log dir /d9 (it has /d1, /d2)"),
    ({9: ("/d1",)}, {}, "names broker 9, which is not registered"),
    ({3: ("/d1", "/d2")}, {}, "names every log dir of broker 3: decommission it instead"),
    ({3: ("/d2",)}, {"replica_dirs": (), "replica_dirs_read": False}, "which replicas are in /d2 of broker 3 is not "
                                                                      "known"),
    ({3: ("/d2",)}, {"log_dirs": ()}, "the log dirs of broker 3 were not read"),
])
def test_a_removal_the_cluster_cannot_take_is_refused_in_one_line_at_the_brokers_section(paths, snap_kwargs,
                                                                                         expected) -> None:
    snap = replace(jbod({"/d1": [0, 1, 2, 3], "/d2": [4, 5, 6, 7]}, SIZES), **snap_kwargs)
    with pytest.raises(PlanningError) as caught:
        plan(removing(paths), snap, SIZES)
    [problem] = caught.value.problems
    assert expected in problem.message and problem.location == HERE
    if "not known" in expected:
        assert "-b BOOTSTRAP" in problem.message


def test_a_removed_dir_on_a_decommissioned_broker_is_refused() -> None:
    snap = jbod({"/d1": [0, 1, 2, 3], "/d2": [4, 5, 6, 7]}, SIZES)
    desired = replace(declare(), brokers=BrokerChanges((3,), (), HERE, {3: ("/d2",)}))
    with pytest.raises(PlanningError, match="which is decommissioned"):
        plan(desired, snap, SIZES)


def test_disk_within_broker_evens_a_brokers_dirs_within_the_band_and_keeps_its_replicas_on_it() -> None:
    snap = jbod({"/d1": [0, 1, 2, 3, 4], "/d2": [5, 6, 7]}, SIZES)  # /d1 10 GiB of 10 ... 9 GiB: 90%, /d2 30%
    sizes = dict(SIZES)
    desired = replace(declare(), rebalance=Rebalance(goals=("disk_within_broker",), tolerance=0.0, location=HERE))
    result = plan(desired, snap, sizes)
    assert not result.moves and result.disk_moves
    used = {"/d1": 10.0 * GIB, "/d2": 3.0 * GIB}
    for m in result.disk_moves:
        assert (m.broker, m.from_dir, m.to_dir, m.reason) == (3, "/d1", "/d2", "rebalance disk_within_broker")
        used["/d1"] -= m.bytes
        used["/d2"] += m.bytes
    mean = (13 * GIB) / (2 * TOTAL)
    width = band(0.0)
    assert all(abs(u / TOTAL - mean) <= mean * width + 1e-9 for u in used.values()), used
    assert max(used.values()) <= 0.8 * TOTAL


def test_disk_within_broker_leaves_a_broker_within_its_band_alone_and_walks_no_goal_of_the_brokers() -> None:
    snap = jbod({"/d1": [0, 2, 3, 5], "/d2": [1, 6, 7]}, SIZES)  # 6 GiB and 5 GiB: within ±9% of 55%
    desired = replace(declare(), rebalance=Rebalance(goals=("disk_within_broker",), tolerance=0.0, location=HERE))
    result = plan(desired, snap, SIZES)
    assert not result.has_changes and not result.disk_moves


def test_the_playbook_reads_remove_log_dirs_per_broker_and_a_bad_entry_is_one_problem(tmp_path) -> None:
    from tests.unit.test_declare_playbooks import load, messages

    decl = load(tmp_path, """
        - hosts: prod
          brokers: {remove_log_dirs: {3: [/data/d2, /data/d3/], "4": /data/d1}}
        - hosts: prod
          brokers: {remove_log_dirs: {3: [/data/d4]}}
        - hosts: dev
          brokers: {remove_log_dirs: {2: [data/d2]}}
    """)
    assert messages(decl) == [f"{tmp_path / 'play.yml'}:6:12: brokers.remove_log_dirs.2: ['data/d2'] is not a list "
                              f"of log dirs (name each dir by its absolute path, as the broker's log.dirs does)"]
    assert decl.desired["prod"].brokers.remove_log_dirs == {3: ("/data/d2", "/data/d3", "/data/d4"), 4: ("/data/d1",)}


def test_kops_rebalance_with_disk_within_broker_evens_the_dirs_after_the_walk_over_the_brokers() -> None:
    from kops.planner.goal_rebalance import GoalRequest, rebalance_goals

    snap = jbod({"/d1": [0, 1, 2, 3, 4], "/d2": [5, 6, 7]}, SIZES)
    result = rebalance_goals(snap, GoalRequest(("replicas", "disk_within_broker")), SIZES)
    assert [g.name for g in result.outcomes] == ["replicas"]  # the walk's table: the goal inside brokers is a step
    disk = result.plan.disk_moves
    assert disk and all((m.broker, m.from_dir, m.to_dir) == (3, "/d1", "/d2") for m in disk)
    moved = {m.tp: m.to_replicas for m in result.plan.moves}
    assert all(3 in moved.get(m.tp, snap.partition(m.tp).replicas) for m in disk)
    assert result.worthwhile  # the disk moves alone are worth applying: no goal of the table gains


def test_kops_rebalance_with_disk_within_broker_alone_on_dirs_within_their_band_is_not_worth_applying() -> None:
    from kops.planner.goal_rebalance import GoalRequest, rebalance_goals

    snap = jbod({"/d1": [0, 2, 3, 5], "/d2": [1, 6, 7]}, SIZES)
    result = rebalance_goals(snap, GoalRequest(("disk_within_broker",)), SIZES)
    assert not result.plan.has_changes and not result.worthwhile and result.outcomes == ()


@pytest.mark.parametrize("level", [14, 16])
def test_disk_moves_on_kraft_below_metadata_version_3_7_iv2_are_refused_in_one_line_naming_it(level: int) -> None:
    snap = replace(jbod({"/d1": [0, 5, 6], "/d2": [1, 4, 7], "/d3": [2, 3]}, SIZES), metadata_version=level)
    with pytest.raises(PlanningError) as caught:
        plan(removing({3: ("/d2",)}), snap, SIZES)
    [problem] = caught.value.problems
    assert f"need metadata.version 3.7-IV2 (feature level 17) or later: this cluster's finalized metadata.version " \
           f"is level {level}" in problem.message


@pytest.mark.parametrize("level", [17, 25, None])
def test_disk_moves_at_or_above_3_7_iv2_or_in_zookeeper_mode_are_planned(level: int | None) -> None:
    snap = replace(jbod({"/d1": [0, 5, 6], "/d2": [1, 4, 7], "/d3": [2, 3]}, SIZES), metadata_version=level)
    assert len(plan(removing({3: ("/d2",)}), snap, SIZES).disk_moves) == 3


def test_an_imported_file_naming_log_dirs_is_refused_below_3_7_iv2_and_the_level_round_trips_a_snapshot() -> None:
    from kops.errors import DocumentError
    from kops.model import snapshot_format
    from kops.model.dir_moves import place
    from kops.planner.planner import plan_targets

    snap = replace(jbod({"/d1": [0, 5, 6], "/d2": [1, 4, 7], "/d3": [2, 3]}, SIZES), metadata_version=16)
    assert snapshot_format.loads(snapshot_format.dumps(snap), "s.json").metadata_version == 16
    assert b"metadata_version" not in snapshot_format.dumps(replace(snap, metadata_version=None))
    empty = plan_targets(snap, {}, "test")
    with pytest.raises(DocumentError, match="this cluster's finalized metadata.version is level 16"):
        place(empty, snap, {TopicPartition("orders", 1): [(3, "/d1")]}, SIZES, None, 1e8, "moves.json", "imported")


def test_the_golden_plan_empties_broker_3s_dir_into_its_other_dir_and_the_rest_onto_other_brokers() -> None:
    from kops.model import plan_format
    from tests.golden.scenarios import HERE, jbod_snapshot

    golden = plan_format.loads((HERE / "remove-log-dirs" / "expected-plan.json").read_bytes(), "remove-log-dirs")
    snap = jbod_snapshot()
    in_d2 = {TopicPartition(r.topic, r.partition) for r in snap.replica_dirs if r.path == "/data/d2"}
    disk, moved = {m.tp for m in golden.disk_moves}, {m.tp for m in golden.moves}
    assert disk and moved and disk | moved == in_d2 and not disk & moved  # every replica of /data/d2, once
    assert all((m.broker, m.from_dir, m.to_dir) == (3, "/data/d2", "/data/d1") for m in golden.disk_moves)
    assert all(3 in m.from_replicas and 3 not in m.to_replicas for m in golden.moves)
    assert golden.batches[-1].disk_moves and not golden.batches[-1].moves


def on_filesystems(snap: Snapshot, used: dict[tuple[str, ...], float]) -> Snapshot:
    """`snap` with broker 3's filesystems (the dirs sharing each, TOTAL bytes) holding `used` bytes, as
    DescribeLogDirs reports them: every dir of a filesystem with its total and usable bytes."""
    rows = [d for d in snap.log_dirs if d.broker != 3]
    rows += [LogDirUsage(3, path, TOTAL, int(TOTAL - bytes_)) for paths, bytes_ in used.items() for path in paths]
    return replace(snap, log_dirs=tuple(sorted(rows)))


def applied(snap: Snapshot, done: Plan) -> Snapshot:
    """`snap` once `done` is applied, as DescribeLogDirs lists the replicas: each in its new dir only, a replica
    that left a broker in none, one that arrived in the dir it was placed in."""
    to = {(m.tp, m.broker): m.to_dir for m in done.disk_moves}
    after = {m.tp: m.to_replicas for m in done.moves}
    rows = [replace(r, path=to.get((TopicPartition(r.topic, r.partition), r.broker), r.path))
            for r in snap.replica_dirs if r.broker in after.get(TopicPartition(r.topic, r.partition), (r.broker,))]
    rows += [ReplicaDir(m.topic, m.partition, b, path) for m in done.moves if m.to_dirs
             for b, path in zip(m.to_replicas, m.to_dirs, strict=True) if path is not None and b in m.adding]
    return replace(apply_plan(snap, done), replica_dirs=tuple(sorted(rows)))


def in_dirs(snap: Snapshot, paths: tuple[str, ...]) -> float:
    return float(sum(SIZES[TopicPartition(r.topic, r.partition)] for r in snap.replica_dirs if r.path in paths))


WITHIN = replace(declare(), rebalance=Rebalance(goals=("disk_within_broker",), tolerance=0.0, location=HERE))


def test_the_first_plan_of_disk_within_broker_is_the_one_filesystem_use_gave_where_no_old_copy_is_left() -> None:
    # each filesystem holds its replicas and nothing else: replicas' bytes and filesystem use are one figure
    snap = jbod({"/d1": [0, 1, 2, 3, 4], "/d2": [5, 6, 7]}, SIZES)
    moves = plan(WITHIN, snap, SIZES).disk_moves
    assert [(m.partition, m.from_dir, m.to_dir, m.bytes) for m in moves] == [(1, "/d1", "/d2", 3 * GIB)]


@pytest.mark.parametrize("goals", [None, ("replicas", "disk_within_broker")])
def test_a_plan_right_after_an_apply_moves_nothing_while_the_moved_replicas_old_copies_still_fill_their_dir(
        goals: tuple[str, ...] | None) -> None:
    """Found on Kafka 4.3.1 (two tmpfs dirs per broker): Kafka keeps a moved replica's old copy as
    `<topic>-<partition>.<uuid>-delete` for log.segment.delete.delay.ms (60 s), so /d1's filesystem still counts
    it while DescribeLogDirs lists the replica in /d2 only; evened by filesystem use, the second plan moved 3
    replicas more, and once the copies were gone the third moved them back."""
    from kops.planner.goal_rebalance import GoalRequest, rebalance_goals

    def planned(snap: Snapshot):
        if goals is None:
            return plan(WITHIN, snap, SIZES)
        return rebalance_goals(snap, GoalRequest(goals), SIZES).plan

    snap = jbod({"/d1": [0, 1, 2, 3, 4], "/d2": [5, 6, 7]}, SIZES)  # 10 GiB and 3 GiB of 10
    first = planned(snap)
    assert first.disk_moves and {(m.from_dir, m.to_dir) for m in first.disk_moves} == {("/d1", "/d2")}
    moved = sum(m.bytes for m in first.disk_moves)
    done = applied(snap, first)
    right_after = on_filesystems(done, {("/d1",): 10 * GIB, ("/d2",): 3 * GIB + moved})  # old copies in /d1
    assert in_dirs(right_after, ("/d1",)) < 10 * GIB  # used bytes > the replicas listed there
    shares = [(TOTAL - (d.usable_bytes or 0)) / TOTAL for d in right_after.log_dirs if d.broker == 3]
    mean = sum(shares) / 2
    assert max(shares) > mean * (1 + band(0.0))  # by filesystem use, out of the band: the trap
    second = planned(right_after)
    assert not second.disk_moves and not second.has_changes
    deleted = on_filesystems(done, {("/d1",): 10 * GIB - moved, ("/d2",): 3 * GIB + moved})  # 60 s later
    assert not planned(deleted).disk_moves


def test_lasting_files_beside_the_replicas_count_against_the_limit_not_in_the_balance() -> None:
    # /d2's filesystem holds 5 GiB that are no replica's (or an old copy): replicas 10 GiB and 3 GiB, as above,
    # are evened as above, but nothing goes to /d2 past its limit of 8 GiB: 5 + 3 + what arrives
    snap = on_filesystems(jbod({"/d1": [0, 1, 2, 3, 4], "/d2": [5, 6, 7]}, SIZES),
                          {("/d1",): 10 * GIB, ("/d2",): 8 * GIB - 1})
    assert not plan(WITHIN, snap, SIZES).disk_moves  # no room under /d2's limit
    roomy = on_filesystems(snap, {("/d1",): 10 * GIB, ("/d2",): 4 * GIB})  # 1 GiB of other files
    assert [(m.partition, m.to_dir) for m in plan(WITHIN, roomy, SIZES).disk_moves] == [(1, "/d2")]


def test_a_replica_whose_disk_move_is_in_flight_counts_in_the_dir_its_future_copy_is_in() -> None:
    # partition 0 (3 GiB) is being copied from /d1 to /d2 by another tool: both copies fill the filesystems
    # (10 and 6 GiB), but once it swaps /d1 holds 7 GiB and /d2 6 GiB, within ±9% of 65%: nothing to move
    snap = jbod({"/d1": [0, 1, 2, 3, 4], "/d2": [5, 6, 7]}, SIZES)
    snap = replace(snap, replica_dirs=tuple(sorted((*snap.replica_dirs, ReplicaDir("orders", 0, 3, "/d2", True)))))
    snap = on_filesystems(snap, {("/d1",): 10 * GIB, ("/d2",): 6 * GIB})
    assert not plan(WITHIN, snap, SIZES).disk_moves


def test_dirs_sharing_a_filesystem_are_one_volume_after_an_apply_too() -> None:
    # /d1 and /d2 share a 10 GiB filesystem (10 GiB of replicas), /d3 has its own (3 GiB): moves go from the
    # shared one to /d3, never between /d1 and /d2; right after the apply, with the old copies still on the
    # shared filesystem, and after they are gone, the same goal moves nothing
    snap = jbod({"/d1": [0, 1], "/d2": [2, 3, 4], "/d3": [5, 6, 7]}, SIZES)
    snap = on_filesystems(snap, {("/d1", "/d2"): 10 * GIB, ("/d3",): 3 * GIB})
    first = plan(WITHIN, snap, SIZES)
    assert first.disk_moves and all(m.from_dir in ("/d1", "/d2") and m.to_dir == "/d3" for m in first.disk_moves)
    moved = sum(m.bytes for m in first.disk_moves)
    done = applied(snap, first)
    assert not plan(WITHIN, on_filesystems(done, {("/d1", "/d2"): 10 * GIB, ("/d3",): 3 * GIB + moved}),
                    SIZES).disk_moves
    assert not plan(WITHIN, on_filesystems(done, {("/d1", "/d2"): 10 * GIB - moved, ("/d3",): 3 * GIB + moved}),
                    SIZES).disk_moves
