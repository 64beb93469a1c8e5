"""Fingerprints of the parts of a snapshot a plan depends on, so `kops apply` can refuse drift by name.

One digest for the broker set (ids and racks) and one per topic the plan touches (its assignment, in-flight
state and config). Leaders and ISRs are not included: they change all the time and a plan does not depend
on them. Comparing two fingerprints names what changed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

import orjson

from kops.model.snapshot import Snapshot


def _digest(value: object) -> str:
    return hashlib.sha256(_canonical(value)).hexdigest()[:16]


def _canonical(value: object) -> bytes:
    """`json.dumps(value, sort_keys=True, separators=(",", ":"))`, byte for byte, so digests of plans made before
    stay valid: orjson's, where it comes out ASCII (then the same bytes: what a digest holds is integers, strings,
    booleans, lists and maps by string), else the standard library's, which escapes the rest. A million-partition
    plan's fingerprint: 1.97 -> 0.96 s."""
    fast = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    return fast if fast.isascii() else json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def topic_digest(snapshot: Snapshot, name: str) -> str:
    topic = snapshot.topics.get(name)
    if topic is None:
        return "absent"
    return _digest({  # tuples are JSON arrays as lists are, and sort_keys orders the partitions: no copy, no sort
        "partitions": {str(p): [x.replicas, x.adding, x.removing] for p, x in topic.partitions.items()},
        "config": topic.config,
        "pending_deletion": name in snapshot.pending_deletions,
    })


def fingerprint(snapshot: Snapshot, topics: Iterable[str]) -> dict[str, object]:
    return {
        "cluster_id": snapshot.cluster_id,
        "brokers": _digest(sorted([b.id, b.rack] for b in snapshot.brokers)),
        "topics": {name: topic_digest(snapshot, name) for name in sorted(set(topics))},
    }


def drift(planned: dict[str, object], snapshot: Snapshot) -> list[str]:
    """What changed since the plan was made, one phrase each; empty when nothing did."""
    changes = []
    if planned.get("cluster_id") != snapshot.cluster_id:
        changes.append(f"cluster id is {snapshot.cluster_id}, the plan is for {planned.get('cluster_id')}")
    found = planned.get("topics")
    topics: dict[str, object] = found if isinstance(found, dict) else {}
    now = fingerprint(snapshot, topics)
    if now["brokers"] != planned.get("brokers"):
        changes.append("the set of brokers (or their racks) changed")
    now_topics = now["topics"]
    assert isinstance(now_topics, dict)
    for name, digest in sorted(topics.items()):
        current = now_topics[name]
        if current != digest:
            what = "was deleted" if current == "absent" else ("was created" if digest == "absent" else "changed")
            changes.append(f"topic {name} {what}")
    return changes
