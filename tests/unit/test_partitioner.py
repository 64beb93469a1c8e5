"""KIP-253 linear hashing (seed 003): murmur2 as Kafka computes it, and the properties the KIP relies on."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kops.model.partitioner import key_shares, linear_bucket, murmur2, partition_for
from tests.examples import examples


def signed(value: int) -> int:
    return value - (1 << 32) if value >= 1 << 31 else value


@pytest.mark.parametrize("key, expected", [
    # Kafka's UtilsTest.testMurmur2 vectors
    ("21", -973932308),
    ("foobar", -790332482),
    ("a-little-bit-long-string", -985981536),
    ("a-little-bit-longer-string", -1486304829),
    ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    ("abc", 479470107),
])
def test_murmur2_matches_kafka(key: str, expected: int) -> None:
    assert signed(murmur2(key.encode())) == expected


def test_with_no_growth_it_is_kafkas_default_partitioner() -> None:
    for key in ("user-1", "user-2", "order-77"):
        assert partition_for(key, 6, 6) == (murmur2(key.encode()) & 0x7FFFFFFF) % 6


counts = st.integers(min_value=1, max_value=12).flatmap(
    lambda n: st.tuples(st.just(n), st.integers(min_value=n, max_value=8 * n)))
# 50 to 400 non-negative 31-bit hashes, as one draw of bytes (400 integer draws an example took most of the time),
# with both ends of the range always among them
hashes = st.binary(min_size=4 * 48, max_size=4 * 398).map(
    lambda raw: [0, 0x7FFFFFFF, *(int.from_bytes(raw[i:i + 4], "big") & 0x7FFFFFFF for i in range(0, len(raw) - 3, 4))])


@settings(max_examples=examples(300), deadline=None)
@given(counts, hashes)
def test_each_new_partition_splits_exactly_one_existing_partition(nu: tuple[int, int], values: list[int]) -> None:
    n, u = nu
    moves = {(linear_bucket(h, n, u), linear_bucket(h, n, u + 1)) for h in values}
    moved = {(old, new) for old, new in moves if old != new}
    assert all(new == u for _old, new in moved)  # keys only ever move to the new partition ...
    assert len({old for old, _new in moved}) <= 1  # ... and all from one existing partition
    assert all(0 <= new <= u for _old, new in moves)


@settings(max_examples=examples(300), deadline=None)
@given(counts, hashes)
def test_deleting_the_last_partition_folds_it_into_one_and_moves_nothing_else(
        nu: tuple[int, int], values: list[int]) -> None:
    n, u = nu
    if u == n:
        return
    for h in values:
        before, after = linear_bucket(h, n, u), linear_bucket(h, n, u - 1)
        if before != u - 1:
            assert after == before
    folded = {linear_bucket(h, n, u - 1) for h in values if linear_bucket(h, n, u) == u - 1}
    assert len(folded) <= 1


def test_the_partition_each_new_one_splits_is_the_split_pointer() -> None:
    # N = 3: U = 3 → 4 splits 0; 4 → 5 splits 1; 5 → 6 splits 2; 6 → 7 splits 0 again (next level)
    keys = [f"k{i}" for i in range(5000)]
    for u, split in ((3, 0), (4, 1), (5, 2), (6, 0), (7, 1)):
        sources = {partition_for(k, 3, u) for k in keys if partition_for(k, 3, u + 1) == u}
        assert sources == {split}


@given(st.binary(max_size=64), counts)
def test_partition_for_is_always_an_undeleted_partition(key: bytes, nu: tuple[int, int]) -> None:
    n, u = nu
    assert 0 <= partition_for(key, n, u) < u


def test_bad_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="initial_partition_count"):
        partition_for("k", 0, 3)
    with pytest.raises(ValueError, match="below initial_partition_count"):
        partition_for("k", 4, 3)


def test_key_shares_cover_every_undeleted_partition_and_sum_to_one() -> None:
    shares = key_shares(4, 6)
    assert len(shares) == 6 and abs(sum(shares) - 1.0) < 1e-9
    # partitions 0 and 1 were split (into 4 and 5): each half of them carries about an eighth of the keys
    assert all(0.08 < shares[p] < 0.17 for p in (0, 1, 4, 5)) and all(0.2 < shares[p] < 0.3 for p in (2, 3))
