"""The lease in `__kops`, folded from log entries as every contender reads them (no cluster needed here; the
lab tests race real processes on real Kafka)."""

from __future__ import annotations

import json

from kops.cluster.admin.kops_log import Entry
from kops.cluster.admin.lease import Claims

LEASE = 10_000


def beat(offset: int, ms: int, claim: str, previous: int | None = None, claimed: int | None = None,
         who: str = "a") -> Entry:
    value = {"holder": {"user": who}, "lease_ms": LEASE, "previous_ms": previous, "claimed": claimed}
    return Entry(offset, ms, f"lock/{claim}", json.dumps(value).encode())


def folded(*entries: Entry) -> Claims:
    claims = Claims()
    for entry in entries:
        claims.fold(entry)
    return claims


def test_the_first_live_claim_in_log_order_wins() -> None:
    claims = folded(beat(0, 1_000, "a"), beat(1, 1_001, "b", who="b"))
    assert claims.winner(2_000).id == "a"
    assert folded(beat(0, 1_000, "b", who="b"), beat(1, 1_001, "a")).winner(2_000).id == "b"


def test_a_claim_lapses_a_lease_after_its_last_heartbeat() -> None:
    claims = folded(beat(0, 1_000, "a"), beat(1, 5_000, "a", previous=1_000, claimed=0), beat(2, 6_000, "b"))
    assert claims.winner(14_000).id == "a"  # 9 s after its last beat
    assert claims.winner(16_000).id == "b"  # 11 s: a is gone, b (still live) holds


def test_a_claim_that_once_lapsed_is_dead_for_good() -> None:
    """A holder paused past its lease may heartbeat again on waking: it does not take the lock back."""
    claims = folded(beat(0, 1_000, "a"), beat(1, 2_000, "b"), beat(2, 9_000, "b", previous=2_000, claimed=1),
                    beat(3, 12_500, "a", previous=1_000, claimed=0))
    assert claims.by_id["a"].dead
    assert claims.winner(13_000).id == "b"


def test_the_gap_is_seen_even_when_compaction_removed_the_beats_between() -> None:
    """Only the claim's last record survives compaction; it carries the time of the one before."""
    claims = folded(beat(7, 30_000, "a", previous=15_000, claimed=0))
    assert claims.by_id["a"].dead and claims.by_id["a"].first_offset == 0


def test_a_released_claim_frees_the_lock() -> None:
    release = Entry(2, 1_500, "lock/a", None)
    claims = folded(beat(0, 1_000, "a"), beat(1, 1_100, "b"), release)
    assert claims.winner(1_600).id == "b"
    assert folded(beat(0, 1_000, "a"), release).winner(1_600) is None


def test_records_that_are_not_claims_are_ignored() -> None:
    claims = folded(Entry(0, 1_000, "execution/x", b"{}"), beat(1, 1_001, "a"), Entry(2, 1_002, "lock/b", b"not json"))
    assert claims.winner(1_500).id == "a" and set(claims.by_id) == {"a"}
