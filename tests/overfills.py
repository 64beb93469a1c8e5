"""Every broker and resource a plan takes over its cap, as values a test can compare: held to a declaration
whatever the plan was made with (kops.planner.headroom.capacity_report walks the plan's batches)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kops.model.capacity import CapacityDeclaration
from kops.model.partitions import TopicPartition
from kops.model.plan import Plan
from kops.model.snapshot import Snapshot
from kops.planner.headroom import capacity_report


@dataclass(frozen=True)
class Overfill:
    """One broker and resource over its cap: the most it holds, where (`batch`: the peak of that batch; None:
    after the plan) and the cap."""

    broker: int
    resource: str
    held: int
    batch: int | None
    cap: int


def hard_violations(plan: Plan, snapshot: Snapshot, sizes: Mapping[TopicPartition, int],
                    declared: CapacityDeclaration | None, write: Mapping[TopicPartition, float] | None = None,
                    fanout: Mapping[str, int] | None = None) -> list[Overfill]:
    """Every broker × resource that `plan` takes over its cap at any batch boundary or batch peak."""
    report = capacity_report(plan, snapshot, sizes, declared, write, fanout)
    if report is None:
        return []
    return [Overfill(broker, resource, u.peak, u.peak_batch if u.peak > u.after else None, u.cap)
            for broker, usages in sorted(report.brokers.items()) for resource, u in usages.items() if u.peak > u.cap]
