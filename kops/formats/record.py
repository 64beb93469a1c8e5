"""`kops-execution/1`: the record of one run of `kops apply` or `kops rollback`.

Written before each action it describes, in the cluster (`/kops/executions/ID` or the `__kops` topic) and beside
the plan, so `--resume`, `kops status` and `kops rollback` work after a `kill -9` at any point. A record kops
cannot read whole is refused: resuming from a damaged one could restore the wrong throttles or undo the wrong
moves. Each object names the class of kops/model/execution.py it holds (`domain`): the conversions both ways are
derived from this declaration (kops/formats/binding.py), a move and an election's partition written as rows.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, Strict, model_validator

from kops.formats.base import Doc, Flag, Id, IdKey, Rate, Replicas, Seconds, Size, Text, fail
from kops.formats.plan import RollingDoc
from kops.model.execution import BatchRecord, ConfigRecord, CordonRecord, ExecutionRecord

FORMAT = "kops-execution/1"
BatchStatus = Literal["pending", "running", "done", "cancelled"]
RunStatus = Literal["running", "done", "stopped", "failed"]
MoveRow = tuple[Text, Id, Replicas, Replicas, Size]  # topic, partition, from, to, bytes of one replica
DiskMoveRow = tuple[Text, Id, Id, Text, Text, Replicas, Size]  # topic, partition, broker, from dir, to dir, replicas,
# bytes
Timestamp = Seconds  # seconds since the epoch
Scalar = Annotated[str, Strict()] | Annotated[int, Strict()] | Annotated[float, Strict()] | None


class ConfigRecordDoc(Doc):
    """A config change kops made (not throttles): the overrides before and after, for rollback."""

    domain = ConfigRecord

    entity_type: Literal["topics", "brokers"]
    entity: Text
    before: dict[Text, Text]
    after: dict[Text, Text]


class CordonRecordDoc(Doc):
    """A broker's `cordoned.log.dirs` before and after kops cordoned the dirs a drain empties (KIP-1066)."""

    domain = CordonRecord

    broker: Id
    before: Text | None = Field(description="the value found (null: not set), which the rollback restores")
    after: Text = Field(description="the value kops wrote")


class BatchRecordDoc(Doc):
    domain = BatchRecord
    rows: ClassVar[dict[str, tuple[str, ...]]] = {"moves": ("topic", "partition", "from_replicas", "to_replicas",
                                                           "bytes"),
                                                 "disk_moves": ("topic", "partition", "broker", "from_dir", "to_dir",
                                                                "replicas", "bytes")}

    index: int = Field(ge=1, le=2**31 - 1, strict=True)
    status: BatchStatus
    moves: list[MoveRow] = Field(description="`[topic, partition, from, to, bytes]`: `from` is what rollback "
                                             "restores, in order")
    estimate_seconds: Seconds | None
    started_at: Timestamp | None
    finished_at: Timestamp | None
    progress_at: Timestamp | None = Field(description="the last time the batch moved (stall detection)")
    disk_moves: list[DiskMoveRow] = Field(default_factory=list, exclude_if=lambda v: not v, description=(
        "`[topic, partition, broker, from dir, to dir, replicas, bytes]`: a replica to another log dir of its "
        "broker, run after the batch's moves; `from dir` is what rollback restores; absent when none"))
    caps: dict[IdKey, Rate] = Field(default_factory=dict, exclude_if=lambda v: not v, description=(
        "broker id -> the most its follower rate may be while the batch runs, whatever the execution's rate: the "
        "plan's caps (a batch's `throttle.caps`); absent when none"))
    undo_caps: dict[IdKey, Rate] = Field(default_factory=dict, exclude_if=lambda v: not v, description=(
        "the same for the rollback of this batch's moves, onto the brokers they leave: the plan's rollback batch's "
        "`throttle.caps`; absent when none"))


class RecordDoc(Doc):
    """The execution record (compact JSON, sorted keys)."""

    domain = ExecutionRecord
    names: ClassVar[dict[str, str]] = {"edited_plan_sections": "edited"}
    rows: ClassVar[dict[str, tuple[str, ...]]] = {"election": ("topic", "partition")}

    format: Literal["kops-execution/1"]
    id: Text = Field(min_length=1)
    kind: Literal["apply", "rollback"]
    of: Text | None = Field(description="rollback: the execution it undoes")
    plan_digest: Text
    plan_path: Text
    cluster_id: Text | None
    status: RunStatus
    stop_reason: Text | None
    started_at: Timestamp
    updated_at: Timestamp
    holder: dict[Text, Scalar] = Field(description="who ran it: host, user, pid, plan, execution, started")
    rate: Rate | None = Field(description="throttle rate, bytes/s per broker; null: unthrottled")
    steps_done: list[Text] = Field(description="non-move changes done: `create:T`, `config:topics/T`, ...")
    configs: list[ConfigRecordDoc]
    throttles_before: dict[Text, dict[Text, Text | None]] = Field(
        description="`topics/T` or `brokers/N` -> the value of each throttle key found before (null: absent)")
    throttles_written: dict[Text, dict[Text, Text]] = Field(description="what kops last wrote there")
    batches: list[BatchRecordDoc]
    election: list[tuple[Text, Id]] = Field(description="`[topic, partition]` for the preferred-leader election")
    election_done: Flag
    irreversible: list[Text]
    edited_plan_sections: list[Text] | None = Field(default=None, exclude_if=lambda v: not v,
                                                    description="plan sections edited by hand and run with "
                                                                "`--accept-edited-plan`")
    rolling: RollingDoc | None = Field(default=None, exclude_if=lambda v: v is None,
                                       description="a rolling execution: each batch holds one move, several run "
                                                   "at once within these caps")

    cordons: list[CordonRecordDoc] = Field(default_factory=list, exclude_if=lambda v: not v, description=(
        "apply: the brokers whose `cordoned.log.dirs` kops set before batch 1; rollback: those it restores; "
        "absent when none"))

    @model_validator(mode="after")
    def _one_batch_per_index(self) -> RecordDoc:
        indexes = [b.index for b in self.batches]
        if len(set(indexes)) != len(indexes):
            raise fail("holds batch {index} twice", "batches",
                       index=next(i for i in indexes if indexes.count(i) > 1))
        if set(self.throttles_written) - set(self.throttles_before):
            raise fail("names entities whose values before are not recorded", "throttles_written")
        return self
