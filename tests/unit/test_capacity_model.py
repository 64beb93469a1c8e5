"""The capacity model: log dirs as Kafka reports them, shared filesystems counted once, declared figures over
reported ones, and `log_dirs` in the snapshot file (docs/design/capacity.md §1, §3)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from kops.errors import DocumentError
from kops.lab.sample import sample_snapshot
from kops.model import snapshot_format
from kops.model.capacity import (
    REPORTED,
    CapacityDeclaration,
    Figure,
    LogDirUsage,
    Volume,
    disk_warnings,
    partly_reported,
    resolve,
    stray_brokers,
    stray_warnings,
    unreported,
    volumes,
)
from kops.model.snapshot import Snapshot

GIB = 2**30


def test_dirs_of_one_broker_on_one_filesystem_are_one_volume() -> None:
    dirs = [LogDirUsage(1, "/d1", 100 * GIB, 40 * GIB), LogDirUsage(1, "/d2", 100 * GIB, 40 * GIB + 4096)]
    assert volumes(dirs) == (Volume(1, ("/d1", "/d2"), 100 * GIB, 40 * GIB),)


def test_distinct_filesystems_stay_apart_and_brokers_never_share() -> None:
    dirs = [LogDirUsage(1, "/a", 100 * GIB, 40 * GIB), LogDirUsage(1, "/b", 100 * GIB, 60 * GIB),
            LogDirUsage(1, "/c", 50 * GIB, 40 * GIB), LogDirUsage(2, "/a", 100 * GIB, 40 * GIB)]
    assert [(v.broker, v.paths) for v in volumes(dirs)] == [(1, ("/a",)), (1, ("/b",)), (1, ("/c",)), (2, ("/a",))]


def test_a_dir_kafka_answers_minus_one_for_is_its_own_unknown_volume() -> None:
    dirs = [LogDirUsage(1, "/a", None, None), LogDirUsage(1, "/b", None, None, "KAFKA_STORAGE_ERROR"),
            LogDirUsage(2, "/a", 10, 5)]
    assert volumes(dirs) == (Volume(1, ("/a",), None, None), Volume(1, ("/b",), None, None),
                             Volume(2, ("/a",), 10, 5))
    assert unreported(dirs) == [1]


def snapshot_with(dirs: list[LogDirUsage]) -> Snapshot:
    return replace(sample_snapshot(), log_dirs=tuple(dirs))


def test_reported_disks_sum_volumes_and_count_what_is_in_use() -> None:
    snap = snapshot_with([LogDirUsage(1, "/a", 100, 30), LogDirUsage(1, "/b", 100, 30),  # one volume
                          LogDirUsage(1, "/c", 50, 10), LogDirUsage(2, "/a", None, None)])
    caps = resolve(None, snap)
    assert caps.figure(1, "disk") == Figure(150.0, REPORTED)
    assert caps.in_use == {1: 110}
    assert caps.figure(2, "disk").value is None and caps.limit(2, "disk") is None  # -1: unknown
    assert caps.limit(1, "disk") == pytest.approx(120.0)  # 0.8 of it by default
    assert caps.figure(1, "network_in").source == "unknown"


def test_a_broker_with_a_dir_offline_keeps_the_capacity_of_the_others_and_is_said() -> None:
    """A JBOD broker that lost a disk is the one most at risk of filling the rest: its limit stays, on the dirs
    Kafka still writes to (an unknown capacity would have lifted it)."""
    snap = snapshot_with([LogDirUsage(1, "/a", 100, 30), LogDirUsage(1, "/b", None, None, "KAFKA_STORAGE_ERROR"),
                          LogDirUsage(1, "/c", 50, 10), LogDirUsage(2, "/a", None, None),
                          LogDirUsage(3, "/a", 100, 50)])
    caps = resolve(None, snap)
    assert caps.figure(1, "disk") == Figure(150.0, REPORTED) and caps.in_use[1] == 110
    assert caps.limit(1, "disk") == pytest.approx(120.0)
    assert unreported(snap.log_dirs) == [2] and partly_reported(snap.log_dirs) == {1: ("/b",)}
    assert disk_warnings(caps, snap.log_dirs) == (
        "broker(s) 2: disk size not reported (Kafka before 3.3, or every log dir offline) and not declared: their "
        "disk is not checked (declare capacity.disk)",
        "broker 1: log dir(s) /b offline or not reported: its disk capacity counts its other dirs only")
    declared = CapacityDeclaration(default={"disk": Figure(1000.0, "declared inv.yml:3")})
    assert disk_warnings(resolve(declared, snap), snap.log_dirs) == ()  # declared figures: nothing left unchecked


def test_declared_figures_win_broker_override_first() -> None:
    snap = snapshot_with([LogDirUsage(b.id, "/a", 100, 30) for b in sample_snapshot().brokers])
    declared = CapacityDeclaration(
        default={"disk": Figure(1000.0, "declared inv.yml:3"), "replicas": Figure(50.0, "declared inv.yml:6")},
        brokers={2: {"disk": Figure(4000.0, "declared inv.yml:9")}},
        limits={"disk": 0.5, "network_in": 0.8, "network_out": 0.8})
    caps = resolve(declared, snap)
    assert caps.figure(1, "disk") == Figure(1000.0, "declared inv.yml:3")
    assert caps.figure(2, "disk") == Figure(4000.0, "declared inv.yml:9")
    assert caps.limit(2, "disk") == 2000.0 and caps.limit(1, "replicas") == 50.0  # a count: no fraction
    assert caps.in_use == {}  # a declared capacity counts the replicas' sizes, not the filesystem's use
    assert caps.known


def test_nothing_known_without_declaration_or_report() -> None:
    caps = resolve(None, sample_snapshot())
    assert not caps.known and caps.limit(1, "disk") is None


def test_log_dirs_round_trip_in_the_snapshot_file_and_stay_absent_when_not_read() -> None:
    plain = sample_snapshot()
    assert "log_dirs" not in snapshot_format.to_document(plain)
    snap = snapshot_with([LogDirUsage(2, "/b", None, None, "KAFKA_STORAGE_ERROR"), LogDirUsage(1, "/a", 10, 4)])
    data = snapshot_format.dumps(snap)
    back = snapshot_format.loads(data, "snap.json")
    assert back.log_dirs == (LogDirUsage(1, "/a", 10, 4), LogDirUsage(2, "/b", None, None, "KAFKA_STORAGE_ERROR"))
    assert snapshot_format.dumps(back) == data
    assert snapshot_format.loads(snapshot_format.dumps(plain), "s.json") == plain


def test_a_bad_log_dir_is_named_by_its_location() -> None:
    doc = snapshot_format.to_document(snapshot_with([LogDirUsage(1, "/a", 10, 4)]))
    doc["log_dirs"][0]["total_bytes"] = -1
    with pytest.raises(DocumentError, match=r"log_dirs\[0\]\.total_bytes"):
        snapshot_format.loads(json.dumps(doc), "s.json")


def test_declared_brokers_the_cluster_does_not_have_are_said() -> None:
    """A typo or a removed broker in the declaration would otherwise go unused without a word."""
    figures = {"network_in": Figure(1000.0, "cruise-control cc.json")}
    declared = CapacityDeclaration(default=figures, brokers={1: figures, 9: figures, 12: figures}, origin="cc.json")
    assert stray_brokers(declared, {1, 2, 3}) == [9, 12] and stray_brokers(None, {1}) == []
    assert stray_warnings(declared, {1, 2, 3}) == (
        "capacity declared for broker(s) 9, 12 (cc.json), which the cluster does not have: ignored (a typo, or a "
        "broker since removed)",)
    assert stray_warnings(declared, {1, 9, 12}) == () and stray_warnings(None, {1}) == ()
