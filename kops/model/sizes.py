"""One partition's row of the sizes summary (`kops sizes summarize`), as pure data.

kops/formats/sizes.py declares the row's JSON and names this class; the reader (kops/sizes/reader.py) and the
Spark job's output columns are derived from that declaration.
"""

from __future__ import annotations

from dataclasses import dataclass

from kops.model.partitions import TopicPartition


@dataclass(frozen=True, slots=True)
class PartitionSize:
    """A partition's size and rates over the summary's window; only `bytes` is always known."""

    topic: str
    partition: int
    bytes: int  # the local log at the latest sample (largest replica): what a move copies
    growth_bytes_per_s: float | None = None  # net growth; negative when retention shrank it
    write_bytes_per_s: float | None = None  # appended bytes/s: network in on every replica
    peak_bytes: int | None = None
    remote_bytes: int | None = None  # tiered storage (KIP-405): bytes in remote storage, never copied
    samples: int | None = None
    last_seen: int | None = None  # milliseconds since the epoch

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def write_rate(self) -> float | None:
        """The write rate, never negative. A summary written before `write_bytes_per_s` existed has only
        `growth_bytes_per_s`, which then was the sum of the increases: the write rate."""
        rate = self.write_bytes_per_s if self.write_bytes_per_s is not None else self.growth_bytes_per_s
        return None if rate is None else max(rate, 0.0)
