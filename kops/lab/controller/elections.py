"""Leader elections, as pure choices (seed 004 §B–C, Kafka's PartitionLeaderElectionAlgorithms).

- offline (broker failure, startup of a partition without a live leader): the first live replica, in
  assignment order, that is in the ISR; else, only where the topic allows it (unclean.leader.election.enable,
  default false since Kafka 0.11), the first live replica, whose ISR becomes just itself (data may be lost,
  logged); else no leader (-1), ISR kept, so the partition recovers cleanly when an ISR member returns;
- reassignment: the first replica of the target that is live and in the ISR;
- preferred: the first replica, when it is live and in the ISR;
- controlled shutdown: the first live replica in the ISR that is not shutting down.
"""

from __future__ import annotations

from dataclasses import dataclass

from kops.model.partitions import NO_LEADER

__all__ = ["NO_LEADER", "Election", "controlled_shutdown", "offline", "preferred", "reassignment"]


@dataclass(frozen=True)
class Election:
    leader: int
    isr: tuple[int, ...]
    unclean: bool = False


def offline(replicas: tuple[int, ...], isr: tuple[int, ...], live: set[int], allow_unclean: bool = False) -> Election:
    live_isr = tuple(r for r in isr if r in live)
    for r in replicas:
        if r in live_isr:
            return Election(r, live_isr)
    for r in replicas:
        if allow_unclean and r in live:
            return Election(r, (r,), unclean=True)
    return Election(NO_LEADER, isr)


def reassignment(target: tuple[int, ...], isr: tuple[int, ...], live: set[int]) -> Election | None:
    for r in target:
        if r in live and r in isr:
            return Election(r, isr)
    return None


def preferred(replicas: tuple[int, ...], isr: tuple[int, ...], live: set[int]) -> Election | None:
    if replicas and replicas[0] in live and replicas[0] in isr:
        return Election(replicas[0], isr)
    return None


def controlled_shutdown(replicas: tuple[int, ...], isr: tuple[int, ...], live: set[int],
                        leaving: int) -> Election | None:
    remaining = tuple(r for r in isr if r != leaving)
    for r in replicas:
        if r in remaining and r in live:
            return Election(r, remaining)
    return None
