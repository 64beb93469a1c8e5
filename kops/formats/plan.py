"""`kops-plan/2`: the plan file `kops plan -o FILE` writes and `kops apply`/`kops rollback` read.

Each move is written once, in the batch that runs it (`kops-plan/1` listed moves twice, under `changes` and
under `batches`, and an edit to one copy went unnoticed). Beyond shapes, the declaration checks what apply
relies on: a move's leader is one of its replicas, each partition is moved by one batch, a batch's bytes are
what its moves copy, the rollback undoes exactly the moves, and every broker a move names is one the plan's
broker tables know; a move's `to_dirs` place only the replicas it adds, and a disk move goes between two different
dirs of one broker. Each object names the class of kops/model/plan.py it holds (`domain`): the conversions both
ways are derived from this declaration (kops/formats/binding.py).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field, Strict, field_validator, model_validator

from kops.formats.base import (
    Doc,
    Flag,
    Id,
    IdKey,
    Int,
    Measured,
    Number,
    Positive,
    Rate,
    Replicas,
    Seconds,
    Size,
    Text,
    fail,
)
from kops.model import plan as model
from kops.model.goals import GOAL_NAMES
from kops.model.partitions import TopicPartition

FORMAT = "kops-plan/2"
Index = Annotated[int, Field(ge=1, le=2**31 - 1, strict=True)]
Assignment = Annotated[dict[IdKey, Replicas], Field(min_length=1)]
ConfigMap = dict[Text, Text]
PerBroker = dict[IdKey, Size]


class MoveDoc(Doc):
    """One partition's reassignment; `from` is the precondition apply re-checks before submitting it."""

    domain = model.Move
    names: ClassVar[dict[str, str]] = {"from_": "from_replicas", "to": "to_replicas"}

    topic: Text = Field(description="the topic")
    partition: Id = Field(description="the partition number")
    from_: Replicas = Field(alias="from", description="replicas before, first = preferred leader")
    to: Replicas = Field(description="replicas after, first = preferred leader")
    bytes: Size = Field(description="size of one replica (0 when unknown)")
    leader: Int = Field(description="the broker serving the copy (the current leader), -1 when none")
    kind: Literal["data", "leader"] = Field(description="`data`: the replica set changes; `leader`: only the order")
    reason: Text = Field(description="why the planner moves it")
    remote_bytes: Size | None = Field(default=None, exclude_if=lambda v: v is None, description=(
        "tiered storage (KIP-405, `remote.storage.enable=true`): the partition's bytes in remote storage, which the "
        "move does not copy (`bytes` is the local log a new replica copies); absent for other topics"))
    to_dirs: list[Text | None] | None = Field(default=None, exclude_if=lambda v: v is None, description=(
        "the log dir (absolute path) each replica of `to` is to be born in, null for any dir; only replicas the "
        "move adds are placed (one that stays and changes dir is a disk move); absent: no placement"))
    write_rate: Measured | None = Field(default=None, exclude_if=lambda v: v is None, description=(
        "bytes/s written to the partition (the sizes summary's write rate), where the plan knew write rates: the "
        "network in each new replica takes, which `kops apply --rolling` holds to the destinations' limits at "
        "every wave; absent: not known"))

    @model_validator(mode="after")
    def _consistent(self) -> MoveDoc:
        if self.leader != -1 and self.leader not in self.from_:
            raise fail("{leader} is not one of its replicas {replicas}", "leader", leader=self.leader,
                       replicas=self.from_)
        kind = model.move_kind(self.from_, self.to)
        if kind != self.kind:
            raise fail("is {kind}, but from and to make it a {actual} move", "kind", kind=self.kind, actual=kind)
        problem = None if self.to_dirs is None else model.misplaced_dirs(self.to, self.from_, self.to_dirs)
        if problem:
            raise fail("{problem}", "to_dirs", problem=problem)
        return self

    @property
    def copied_bytes(self) -> int:
        return model.bytes_copied(self.bytes, self.from_, self.to)


def _absolute(path: str) -> str:
    if not path.startswith("/"):
        raise fail("is {path}: a broker knows its log dirs by absolute path", path=path)
    return path


LogDir = Annotated[Text, AfterValidator(_absolute)]


class DiskMoveDoc(Doc):
    """One replica moved to another log dir of its own broker (KIP-113, AlterReplicaLogDirs): a `disk` move."""

    domain = model.DiskMove

    topic: Text = Field(description="the topic")
    partition: Id = Field(description="the partition number")
    broker: Id = Field(description="the broker whose replica moves")
    from_dir: LogDir = Field(description="the log dir it is in")
    to_dir: LogDir = Field(description="the log dir it goes to")
    replicas: Replicas = Field(description="the partition's replicas when the move runs (unchanged by it)")
    bytes: Size = Field(description="size of the replica, copied between the broker's own dirs (0 when unknown)")
    kind: Literal["disk"] = Field(description="always `disk`")
    reason: Text = Field(description="why the planner moves it")

    @model_validator(mode="after")
    def _two_dirs(self) -> DiskMoveDoc:
        if self.from_dir == self.to_dir:
            raise fail("is {path}, the dir the replica is in already", "to_dir", path=self.to_dir)
        if self.broker not in self.replicas:
            raise fail("{broker} holds no replica of it: replicas are {replicas}", "broker", broker=self.broker,
                       replicas=self.replicas)
        return self


class ThrottleDoc(Doc):
    """Replication throttles for one batch, merged with what the cluster had."""

    domain = model.Throttle

    rate: Rate | None = Field(description="bytes/s per broker; null: planned without a throttle")
    topics: dict[Text, ConfigMap] = Field(description="topic -> leader/follower `*.replication.throttled.replicas`")
    brokers: dict[IdKey, ConfigMap] = Field(description="broker id -> `*.replication.throttled.rate`")
    caps: dict[IdKey, Rate] = Field(default_factory=dict, exclude_if=lambda v: not v, description=(
        "broker id -> the most its follower rate may be in this batch (bytes/s): its network-in room at the batch's "
        "peak, below `rate`; kept under any rate `kops apply --throttle` sets. Absent: no broker is capped"))


class EstimateDoc(Doc):
    domain = model.Estimate

    seconds: Seconds | None = Field(description="estimated duration; null when sizes or the rate are unknown")
    bytes_in: PerBroker = Field(description="bytes each destination broker receives")
    bytes_out: PerBroker = Field(description="bytes each source (leader) broker sends")


class BatchDoc(Doc):
    """Moves that run together between two checkpoints."""

    domain = model.Batch

    index: Index = Field(description="position, from 1")
    moves: list[MoveDoc] = Field(description="the batch's moves (data and leader)")
    bytes: Size = Field(description="bytes copied over the network: each move's size times its new replicas")
    throttle: ThrottleDoc
    estimate: EstimateDoc
    disk_moves: list[DiskMoveDoc] = Field(default_factory=list, exclude_if=lambda v: not v, description=(
        "the batch's disk moves (a replica to another dir of its broker), run with its moves; absent when none"))

    @model_validator(mode="after")
    def _bytes_add_up(self) -> BatchDoc:
        copied = sum(m.copied_bytes for m in self.moves)
        if copied != self.bytes:
            raise fail("is {said}, but its moves copy {copied}", "bytes", said=self.bytes, copied=copied)
        return self


class TopicCreationDoc(Doc):
    domain = model.TopicCreation

    topic: Text
    assignment: Assignment = Field(description="partition -> replicas")
    config: ConfigMap = Field(description="the topic's config overrides")


class TopicDeletionDoc(Doc):
    """Destructive: only with `state: absent` and the playbook's permission."""

    domain = model.TopicDeletion

    topic: Text
    partitions: Size = Field(description="its partition count")
    bytes: Size = Field(description="bytes deleted (0 when unknown)")


class PartitionAdditionDoc(Doc):
    domain = model.PartitionAddition

    topic: Text
    assignment: Assignment = Field(description="the new partitions only")


class PartitionDeletionDoc(Doc):
    """KIP-253 (lab clusters only): partitions from `undeleted_partition_count` on are deleted."""

    domain = model.PartitionDeletion

    topic: Text
    current_count: Size
    undeleted_partition_count: Size


class ConfigDoc(Doc):
    """A whole-map change of one entity's overrides; `before` is what rollback restores."""

    domain = model.ConfigChange

    entity_type: Literal["topics", "brokers"]
    entity: Text = Field(description="topic name, broker id or `<default>`")
    set: ConfigMap = Field(description="keys set")
    remove: list[Text] = Field(description="keys removed")
    before: ConfigMap = Field(description="the overrides found")
    destructive: Flag = Field(description="lowers retention or the like: needs the playbook's permission")
    reason: Text


class CordonDoc(Doc):
    """Log dirs a drain empties (KIP-1066): put in the broker's `cordoned.log.dirs` before batch 1, restored by
    the rollback (docs/design/jbod.md §7)."""

    domain = model.Cordon

    broker: Id
    dirs: list[Text] = Field(min_length=1, description="the broker's dirs, or `*` for all of them (a decommission)")


class ChangesDoc(Doc):
    """Everything but moves, which live in `batches`."""

    names: ClassVar[dict[str, str]] = {"topic_creations": "creations", "topic_deletions": "deletions"}

    topic_creations: list[TopicCreationDoc]
    topic_deletions: list[TopicDeletionDoc]
    partition_additions: list[PartitionAdditionDoc]
    partition_deletions: list[PartitionDeletionDoc]
    configs: list[ConfigDoc]
    cordons: list[CordonDoc] = Field(default_factory=list, exclude_if=lambda v: not v, description=(
        "dirs the plan drains, cordoned before its first batch where metadata.version is 4.3-IV0 or later; "
        "absent when none"))


class TopicPartitionDoc(Doc):
    domain = TopicPartition

    topic: Text
    partition: Id


class RollbackDoc(Doc):
    """The inverse, already in the order it runs."""

    domain = model.Rollback

    batches: list[BatchDoc] = Field(description="inverse moves, batches in reverse order")
    configs: list[ConfigDoc] = Field(description="configs back to `before`")
    election: list[TopicPartitionDoc] = Field(description="preferred-leader election afterwards")
    irreversible: list[Text] = Field(description="what rollback cannot undo (created topics, added partitions)")


class UsageDoc(Doc):
    """One broker's load of one resource: bytes (disk), bytes/s (network_in, network_out) or a count (replicas)."""

    domain = model.Usage

    capacity: Size
    limit: Size = Field(description="capacity × the limit's fraction (replicas: the cap itself)")
    source: Text = Field(description="`declared FILE:LINE`, `cruise-control FILE` or `reported (DescribeLogDirs)`")
    before: Size
    after: Size
    peak: Size = Field(description="the most it holds at any point of the plan: at a batch's peak the destination "
                                   "already holds the new copy while the source still holds the old one")
    peak_batch: Size | None = Field(description="the batch of the peak; null when the peak is the start or the end")


class CapacityReportDoc(Doc):
    """Each broker's known capacities, usage and headroom (issue 35). Absent when no capacity is known."""

    domain = model.CapacityReport

    limits: dict[Text, Number] = Field(description="resource -> the share of its capacity a broker may use")
    brokers: dict[IdKey, dict[Text, UsageDoc]] = Field(description="broker id -> resource -> usage; only "
                                                                   "resources with a known capacity")
    over_before: list[Id] = Field(description="brokers already over a limit before the plan")
    unknown: list[Text] = Field(description="resources with no capacity for any broker: not checked")


Percent = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]


class GoalDoc(Doc):
    """One goal of the list the plan was made for (docs/design/goals.md §3), in priority order."""

    domain = model.GoalOutcome

    name: Text = Field(description=f"the goal: {', '.join(f'`{g}`' for g in GOAL_NAMES)}")
    unit: Text = Field(description="what the figures are: `% of capacity` (the peak broker's utilization), `% of "
                                   "mean` (the peak broker over the mean: counts, or a resource some broker's "
                                   "capacity is unknown for), `% of replicas` (topic replicas above their topic's "
                                   "ceiling), `% of partitions` (led by another than their first replica); empty "
                                   "for a goal skipped with no figure")
    before: Percent = Field(description="the figure before the plan")
    after: Percent = Field(description="the figure after the plan")
    lower_bound: Percent = Field(description="the best figure any plan could reach, as racks and whole "
                                             "partitions allow (not simply the mean)")
    moves: Size = Field(description="the optimizer's replica moves spent on this goal (a partition moved twice "
                                    "counts twice, so the goals' sum can exceed `summary.moves`)")
    leader_moves: Size = Field(description="the leadership changes spent on this goal")
    skipped: Text | None = Field(default=None, exclude_if=lambda v: v is None,
                                 description="why the goal was not worked on (`no sizes`, `no write rates`, "
                                             "measured only); absent for a goal the plan worked on")

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        if name not in GOAL_NAMES:
            raise fail("is {name}, not a goal: one of {names}", name=name, names=", ".join(GOAL_NAMES))
        return name


def _each_goal_once(goals: list[GoalDoc]) -> list[GoalDoc]:
    names = [g.name for g in goals]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise fail("names goal {twice} more than once", twice=", ".join(twice))
    return goals


class SummaryDoc(Doc):
    """Totals for reviewers and dashboards; per-broker tables keyed by broker id."""

    domain = model.Summary

    moves: Size = Field(description="replica moves (data)")
    leader_moves: Size = Field(description="order-only moves")
    bytes: Size = Field(description="bytes copied in all")
    lower_bound_moves: Size = Field(description="the fewest replica moves any plan reaching the goal needs")
    lower_bound_bytes: Size
    estimated_seconds: Seconds | None
    lower_bound_seconds: Seconds | None
    destructive: list[Text] = Field(description="destructive changes, named")
    batches: Size
    replicas_before: PerBroker
    replicas_after: PerBroker
    leaders_before: PerBroker
    leaders_after: PerBroker
    bytes_before: PerBroker
    bytes_after: PerBroker
    remote_bytes: Size | None = Field(default=None, exclude_if=lambda v: v is None, description=(
        "tiered topics' bytes in remote storage that the moves leave there, per new replica (what a tool copying "
        "whole logs would add to `bytes`); absent when the plan moves no tiered topic"))
    capacity: CapacityReportDoc | None = Field(default=None, exclude_if=lambda v: v is None,
                                               description="absent when no broker's capacity is known")
    disk_moves: Size = Field(default=0, exclude_if=lambda v: not v, description=(
        "disk moves (a replica to another log dir of its broker); absent when none"))
    disk_bytes: Size = Field(default=0, exclude_if=lambda v: not v, description=(
        "bytes the disk moves copy between brokers' own dirs; absent when no disk move"))
    goals: Annotated[list[GoalDoc], AfterValidator(_each_goal_once)] = Field(
        default_factory=list, exclude_if=lambda v: not v,
        description="the goal list's table (`kops rebalance --goals`), in priority order: per goal, its figure "
                    "before and after, its lower bound and the moves spent on it; absent on a plan made without "
                    "a goal list")

    @classmethod
    def written(cls, value: Any, doc: dict[str, Any]) -> None:
        for key in ("estimated_seconds", "lower_bound_seconds"):  # to the millisecond: no noise in reviews
            doc[key] = None if doc[key] is None else round(doc[key], 3)


class FingerprintDoc(Doc):
    """What the plan depends on; apply recomputes it from the cluster and refuses drift, naming what changed."""

    domain = dict

    cluster_id: Text | None
    brokers: Text = Field(description="digest of the broker ids and racks")
    topics: dict[Text, Text] = Field(description="topic -> digest of its assignment, in-flight state and config "
                                                 "(`absent` for a topic the plan creates)")


class RollingDoc(Doc):
    """Rolling execution (`execution.mode: rolling`): moves submitted as others finish."""

    domain = model.Rolling

    max_moves_per_broker: int = Field(ge=1, le=2**31 - 1, strict=True,
                                      description="moves in flight touching any one broker, as source or destination")
    max_moves: int | None = Field(default=None, ge=1, le=2**31 - 1, strict=True, exclude_if=lambda v: v is None,
                                  description="moves in flight in all (absent: only the per-broker cap)")


class SealDoc(Doc):
    """A digest of each section as kops wrote it: apply and rollback refuse an edited plan, naming the section,
    unless `--accept-edited-plan` (which the execution record notes)."""

    header: Text
    fingerprint: Text
    changes: Text
    batches: Text
    election: Text
    rollback: Text
    summary: Text
    warnings: Text


def _disk_moves(batches: list[BatchDoc]) -> list[DiskMoveDoc]:
    return [m for b in batches for m in b.disk_moves]


def _disk_moves_consistent(plan: PlanDoc) -> None:
    """Each replica moved between dirs once, the rollback moving each back, and the summary's counts true."""
    moves = _disk_moves(plan.batches)
    seen: set[tuple[str, int, int]] = set()
    for m in moves:
        if (m.topic, m.partition, m.broker) in seen:
            raise fail("batches: {tp} on broker {broker} is moved between dirs more than once",
                       tp=f"{m.topic}-{m.partition}", broker=m.broker)
        seen.add((m.topic, m.partition, m.broker))
    undo = sorted((m.topic, m.partition, m.broker, m.to_dir, m.from_dir) for m in _disk_moves(plan.rollback.batches))
    if undo != sorted((m.topic, m.partition, m.broker, m.from_dir, m.to_dir) for m in moves):
        raise fail("rollback.batches do not undo exactly the plan's disk moves")
    if (plan.summary.disk_moves, plan.summary.disk_bytes) != (len(moves), sum(m.bytes for m in moves)):
        raise fail("says {said} disk move(s) of {said_bytes} bytes, but the batches hold {n} of {size}",
                   "summary.disk_moves", said=plan.summary.disk_moves, said_bytes=plan.summary.disk_bytes,
                   n=len(moves), size=sum(m.bytes for m in moves))


class PlanDoc(Doc):
    """The plan file. JSON with sorted keys and no clock: the same inputs give the same bytes."""

    domain = model.Plan

    format: Literal["kops-plan/2"]
    kops_version: Text = Field(description="the kops that made it")
    cluster: Text = Field(description="the inventory host (or `kafka://SERVERS`, `zk://CONNECT`)")
    cluster_id: Text | None = Field(description="the Kafka cluster id; apply refuses another cluster")
    connect: Text | None = Field(description="where the snapshot was read (no credentials)")
    playbook_digest: Text = Field(description="SHA-256 over the playbook, inventory, vars files and extra vars")
    fingerprint: FingerprintDoc
    changes: ChangesDoc
    batches: list[BatchDoc] = Field(description="the moves, each in the one batch that runs it")
    election: list[TopicPartitionDoc] = Field(description="preferred-leader election after the batches")
    rollback: RollbackDoc
    summary: SummaryDoc
    warnings: list[Text] = Field(description="what a reviewer must see; shown by every renderer")
    stall_timeout: Positive | None = Field(default=None, exclude_if=lambda v: v is None,
                                           description="the playbook's `execution.stall_timeout`, seconds "
                                                       "(absent when not set)")
    rolling: RollingDoc | None = Field(default=None, exclude_if=lambda v: v is None,
                                       description="present when the playbook asks for rolling execution")
    serial: Text | None = Field(default=None, exclude_if=lambda v: v is None,
                                description="the play's `serial` (`1`, `25%`): how many clusters of a fleet `kops "
                                            "apply DIR` runs at once (absent when not set)")
    seal: SealDoc | None = Field(default=None, exclude_if=lambda v: v is None)

    @classmethod
    def written(cls, value: Any, doc: dict[str, Any]) -> None:
        doc["summary"]["batches"] = len(value.batches)

    @model_validator(mode="after")
    def _cross_references(self) -> PlanDoc:
        moves = [m for b in self.batches for m in b.moves]
        seen: set[tuple[str, int]] = set()
        for m in moves:
            if (m.topic, m.partition) in seen:
                raise fail("batches: {tp} is moved by more than one batch", tp=f"{m.topic}-{m.partition}")
            seen.add((m.topic, m.partition))
        undo = sorted((m.topic, m.partition, m.to, m.from_) for b in self.rollback.batches for m in b.moves)
        if undo != sorted((m.topic, m.partition, m.from_, m.to) for m in moves):
            raise fail("rollback.batches do not undo exactly the plan's moves")
        _disk_moves_consistent(self)
        known = set(self.summary.replicas_before) | set(self.summary.replicas_after)
        named = {str(b) for m in moves for b in m.from_ + m.to} | {str(m.broker) for m in _disk_moves(self.batches)}
        if known and named - known:
            raise fail("moves name broker(s) {ids}, which the plan's summary does not know",
                       ids=sorted(int(b) for b in named - known))
        if self.summary.batches != len(self.batches):
            raise fail("is {said}, but the plan has {n} batches", "summary.batches", said=self.summary.batches,
                       n=len(self.batches))
        return self
