"""What operators declare for one cluster, as pure data that remembers where each declaration came from.

Produced by `kops.declare` from inventories and playbooks; consumed by the planner. Every declaration keeps
its `SourceLocation`, so an error found much later (an unknown broker, an impossible replication factor) can
still point at the playbook line that asked for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kops.model.capacity import CapacityDeclaration
from kops.model.plan import Rolling


@dataclass(frozen=True, order=True)
class SourceLocation:
    file: str
    line: int  # 1-based
    column: int = 1  # 1-based

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class Secret(str):
    """A string that came from a secret source (`lookup('env', ...)`): never printed, logged or planned."""

    def __repr__(self) -> str:
        return "'***'"


def shown(value: object) -> str:
    """How a value may appear in messages and plans: secrets redacted."""
    return "***" if isinstance(value, Secret) else str(value)


STRATEGIES = ("rack-aware", "balanced", "static")


@dataclass(frozen=True)
class Placement:
    strategy: str | None = None  # None: the planner's default (rack-aware when brokers have racks)
    assignments: dict[int, tuple[int, ...]] | None = None  # static strategy: partition -> replicas
    brokers: tuple[int, ...] | None = None  # only these brokers
    exclude_brokers: tuple[int, ...] = ()


@dataclass(frozen=True)
class TopicDeclaration:
    name: str
    location: SourceLocation
    state: str = "present"  # present | absent
    partitions: int | None = None
    replication_factor: int | None = None
    config: dict[str, str] = field(default_factory=dict)
    config_unchecked: dict[str, str] = field(default_factory=dict)
    config_remove: tuple[str, ...] = ()  # overrides declared `null`: remove them (back to the default)
    placement: Placement = field(default_factory=Placement)
    field_locations: dict[str, SourceLocation] = field(default_factory=dict)
    fanout: int = 1  # consumer groups reading the topic: its leader sends write rate × (followers + fanout)

    def where(self, field_name: str) -> SourceLocation:
        """Location of one field (e.g. `replication_factor`, `config.retention.ms`), else of the topic."""
        return self.field_locations.get(field_name, self.location)

    @property
    def all_config(self) -> dict[str, str]:
        return {**self.config, **self.config_unchecked}


@dataclass(frozen=True)
class BrokerChanges:
    decommission: tuple[int, ...] = ()
    add: tuple[int, ...] = ()
    location: SourceLocation | None = None
    # `remove_log_dirs: {3: [/data/d2]}`: each broker's log dirs to empty (JBOD, docs/design/jbod.md §5)
    remove_log_dirs: dict[int, tuple[str, ...]] = field(default_factory=dict)


GOALS = ("replicas", "leaders", "bytes")


@dataclass(frozen=True)
class Rebalance:
    """A play's `rebalance:` section. `goal` is the single balancer of before goal lists (kops/planner/rebalance.py);
    `goals`, when declared, is the prioritized list `kops plan` places every replica by (kops/planner/goal_plan.py),
    the one `kops rebalance --goals` walks; `tolerance` is the trigger either way (docs/design/goals.md §5)."""

    goal: str = "replicas"
    tolerance: float = 0.1  # allowed relative deviation from the fair share before a goal acts
    location: SourceLocation | None = None
    heal_after: float | None = None  # seconds a broker may be absent before kops plan heals it (healing.md)
    goals: tuple[str, ...] = ()  # a goal list (kops/model/goals.py); empty: `goal` alone, as before goal lists


@dataclass(frozen=True)
class Execution:
    throttle: int | None = None  # bytes per second per broker, None = unthrottled
    max_partitions: int | None = None
    max_bytes: int | None = None
    max_moves_per_broker: int | None = None
    order: str = "size"  # size | topic | as-declared
    stall_timeout: float | None = None  # seconds without progress before a batch stops (kops apply)
    rolling: Rolling | None = None  # `mode: rolling`: moves submitted as others finish (kops apply)
    location: SourceLocation | None = None


@dataclass(frozen=True)
class DesiredState:
    """Everything declared for one cluster (an inventory host) by the plays that target it."""

    cluster: str
    connect: str | None
    topics: dict[str, TopicDeclaration]
    brokers: BrokerChanges = field(default_factory=BrokerChanges)
    rebalance: Rebalance | None = None
    execution: Execution = field(default_factory=Execution)
    allow_delete: bool = False
    plays: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()  # files read, for the plan's digest
    host_vars: dict[str, object] = field(default_factory=dict)
    capacity: CapacityDeclaration | None = None  # the inventory's `capacity` variable, or `--capacity FILE`
    serial: str | None = None  # the play's `serial` (`1`, `25%`): clusters of a fleet applied at once
