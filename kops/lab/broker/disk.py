"""The broker's one log dir as a disk of fixed capacity, and how it fails (KIP-112).

Kafka fails a whole log dir on an I/O error, a full disk among them: every replica in it goes offline (its
fetchers stop, it serves no produce or fetch, LeaderAndIsr for it answers KAFKA_STORAGE_ERROR), and a broker
left with no live dir halts (`LogManager.handleLogDirFailure`: `Exit.halt(1)`, 2.x to 3.9) before it writes
`/log_dir_event_notification`, so the controller learns of it when the broker's ZooKeeper session expires and
moves leadership as for any broker failure. The lab's brokers have one dir each, so a full disk stops the broker.

Bytes are the lab's simulated bytes. What the disk holds is the size of every replica in the dir (log end minus
log start, after retention); usable = capacity − held, as DescribeLogDirs v4 (KIP-827) reports `TotalBytes`
and `UsableBytes` (-1 when unknown: here, a broker without a capacity).
"""

from __future__ import annotations

from dataclasses import dataclass

STORAGE_ERROR = "org.apache.kafka.common.errors.KafkaStorageException"  # kafka-log-dirs' `error`, Kafka 3.x
UNKNOWN_BYTES = -1  # DescribeLogDirs v4's TotalBytes/UsableBytes when the volume's size is unknown


@dataclass
class LogDirDisk:
    path: str
    capacity: int | None = None  # bytes; None: unlimited (total and usable reported as unknown)
    failure: str | None = None  # why the dir went offline; None while it is online

    @property
    def online(self) -> bool:
        return self.failure is None

    def fits(self, held: int, more: int) -> bool:
        """Whether `more` bytes can be written next to the `held` ones (a write that does not fit fails whole)."""
        return self.capacity is None or held + more <= self.capacity

    def total_bytes(self) -> int:
        return UNKNOWN_BYTES if self.capacity is None or not self.online else self.capacity

    def usable_bytes(self, held: int) -> int:
        return UNKNOWN_BYTES if self.capacity is None or not self.online else max(0, self.capacity - held)

    def no_space(self, held: int, more: int, what: str) -> str:
        """The failure as Kafka logs its cause (an IOException from the file system)."""
        return (f"No space left on device: {what} needs {more} bytes, {self.usable_bytes(held)} of "
                f"{self.capacity} bytes free in {self.path}")
