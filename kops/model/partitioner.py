"""Which partition a keyed message goes to under KIP-253 (seed 003): linear hashing over Kafka's murmur2.

Kafka's default partitioner takes `murmur2(key) & 0x7fffffff` modulo the partition count, so adding one
partition moves keys between almost every pair of partitions. Linear hashing instead grows the table one
bucket at a time: with N = initial_partition_count and U = undeleted_partition_count, let `level` = N·2^L be
the largest such product <= U and `split` = U − level. Buckets below `split` have been split in two, so a key
hashing (mod level) below `split` is placed mod 2·level instead. Going from U to U + 1 therefore moves keys
only from bucket `split` to the new bucket U: each new partition splits exactly one existing partition and no
key moves between existing partitions; deleting the last partition folds it back into the one it came from.
"""

from __future__ import annotations

from functools import lru_cache

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2` as an unsigned 32-bit value (Kafka returns the same bits as a signed int)."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length & ~3
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length & 3
    if tail:
        if tail == 3:
            h ^= data[whole + 2] << 16
        if tail >= 2:
            h ^= data[whole + 1] << 8
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h


def _key_bytes(key: bytes | str) -> bytes:
    return key.encode() if isinstance(key, str) else key


def linear_bucket(hash_value: int, initial_count: int, undeleted_count: int) -> int:
    """The bucket of a non-negative hash among `undeleted_count` buckets grown from `initial_count`."""
    if initial_count < 1:
        raise ValueError(f"initial_partition_count must be at least 1, got {initial_count}")
    if undeleted_count < initial_count:
        raise ValueError(f"undeleted_partition_count {undeleted_count} is below initial_partition_count "
                         f"{initial_count}")
    level = initial_count
    while level * 2 <= undeleted_count:
        level *= 2
    split = undeleted_count - level
    bucket = hash_value % level
    return hash_value % (2 * level) if bucket < split else bucket


def partition_for(key: bytes | str, initial_count: int, undeleted_count: int) -> int:
    """The partition of a keyed message on a topic with these KIP-253 counts (always < `undeleted_count`)."""
    return linear_bucket(murmur2(_key_bytes(key)) & 0x7FFFFFFF, initial_count, undeleted_count)


LAB_KEYS = 4096  # the lab's synthetic key space: enough that shares are smooth, small enough to cache


@lru_cache(maxsize=256)
def key_shares(initial_count: int, undeleted_count: int, keys: int = LAB_KEYS) -> tuple[float, ...]:
    """The share of a uniform key space (`key-0` … `key-<keys-1>`) each undeleted partition receives."""
    counts = [0] * undeleted_count
    for i in range(keys):
        counts[partition_for(f"key-{i}", initial_count, undeleted_count)] += 1
    return tuple(c / keys for c in counts)
