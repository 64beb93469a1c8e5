"""The kops-snapshot/1 file: deterministic bytes, lossless round trip, clear errors."""

from __future__ import annotations

import json

import pytest

from kops.errors import DocumentError
from kops.lab.sample import sample_snapshot
from kops.model import snapshot_format


def test_round_trip_is_lossless_and_deterministic() -> None:
    snap = sample_snapshot()
    data = snapshot_format.dumps(snap)
    back = snapshot_format.loads(data, "snap.json")
    assert back == snap
    assert snapshot_format.dumps(back) == data


def test_document_has_the_documented_keys() -> None:
    doc = snapshot_format.to_document(sample_snapshot())
    assert doc["format"] == "kops-snapshot/1"
    for key in ("cluster_id", "controller", "brokers", "topics", "broker_configs", "reassigning",
                "pending_deletions", "migration"):
        assert key in doc
    assert set(doc["brokers"][0]) >= {"id", "rack", "host", "port", "endpoints", "features"}
    part = doc["topics"]["payments"]["partitions"]["1"]
    assert set(part) >= {"replicas", "adding", "removing", "leader", "leader_epoch", "isr"}
    assert doc["reassigning"][0]["topic"] == "payments" and doc["reassigning"][0]["target"] == [4, 5, 6]
    assert doc["broker_configs"]["<default>"] == {"log.cleaner.threads": "2"}
    assert doc["summary"]["offline"] == 1


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(format="kops-snapshot/9"), "format"),
        (lambda d: d["topics"]["orders"]["partitions"]["0"].update(replicas="1,2"),
         "topics.orders.partitions.0.replicas"),
        (lambda d: d["brokers"].append(dict(d["brokers"][0])), "twice"),
        (lambda d: d["topics"]["payments"]["partitions"]["1"].update(adding=[9]), "not in replicas"),
    ],
)
def test_bad_documents_name_the_field(mutate, message: str) -> None:
    doc = json.loads(snapshot_format.dumps(sample_snapshot()))
    mutate(doc)
    with pytest.raises(DocumentError) as info:
        snapshot_format.loads(json.dumps(doc), "snap.json")
    assert info.value.where == "snap.json" and message in info.value.one_line()


@pytest.mark.parametrize("data", [b"", b"\x00\x01", b"[]", b"{"])
def test_garbage_is_a_document_error(data: bytes) -> None:
    with pytest.raises(DocumentError):
        snapshot_format.loads(data, "snap.json")
