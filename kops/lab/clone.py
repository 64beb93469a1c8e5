"""A rehearsal's lab: a cluster whose brokers carry a snapshot's ids and racks, and the data put into it.

The toolkit decides what the clone holds (`kops.rehearsal`: which partitions, their sizes, the scale); this
module starts it on an engine and fills it: the kops engine (real ZooKeeper, the seeds' controller, simulated
bytes and a scaled clock, for scale) or real Kafka (real bytes, fewer of them, for fidelity). Topics are
created through the toolkit's cluster port by the caller, like everything kops does to a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kops.lab import kafka_client, traffic
from kops.lab.engines import KOPS
from kops.lab.kafka_lab import KafkaLab
from kops.lab.kops_engine import Lab

KOPS_BANDWIDTH = 100 * 1024 * 1024  # the kops engine's port speed, per simulated second, at least
HEADROOM = 4  # the port runs this many times faster than the throttle, so the throttle is what binds
# Kafka's default zookeeper.session.timeout.ms (2.5+), as production brokers run; the lab's own default of 6 s let
# brokers of a 50-broker clone on two cores lose their sessions while the clone was being built
SESSION_TIMEOUT = 18.0


@dataclass
class CloneLab:
    lab: Lab | KafkaLab
    engine: str
    zookeeper: str | None  # the kops engine's connect string
    bootstrap: str | None  # real engines

    def fill(self, sizes: dict[str, dict[int, int]]) -> int:
        """Each partition's bytes (topic -> partition -> bytes), appended at its leader."""
        if isinstance(self.lab, Lab):
            with self.lab.client() as client:
                return traffic.fill(client, sizes)
        return kafka_client.fill(self.bootstrap or "", sizes)

    def ingest(self, topic: str, rate: float) -> None:
        """Steady traffic into `topic` (bytes per clone second; simulated seconds on the kops engine)."""
        if isinstance(self.lab, Lab):
            with self.lab.client() as client:
                traffic.set_ingest(client, topic, rate)
        else:
            self.lab.set_ingest(topic, rate)

    def stop_broker(self, broker: int) -> None:
        self.lab.stop_broker(broker)

    def down(self) -> None:
        self.lab.down()


def start(directory: Path, engine: str, racks: Mapping[int, str], *, time_scale: float = 1.0,
          throttle: int | None = None, heap_mb: int = 384) -> CloneLab:
    """Brokers with exactly `racks`' ids and racks, managed by this process (they die with it)."""
    if engine == KOPS:
        lab = Lab(directory, detached=False)
        bandwidth = max(KOPS_BANDWIDTH, HEADROOM * (throttle or 0))
        state = lab.up(time_scale=time_scale, bandwidth=float(bandwidth), rack_of=racks,
                       session_timeout=SESSION_TIMEOUT)
        return CloneLab(lab, engine, state.connect, None)
    real = KafkaLab(directory, detached=False)
    real_state = real.up(engine, heap_mb=heap_mb, rack_of=racks)
    return CloneLab(real, engine, None, real_state.bootstrap)
