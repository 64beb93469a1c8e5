"""The sizes summary: one row per partition, as `kops sizes summarize --out PATH` writes it (Spark's JSON lines
or Parquet under `PATH/partitions/`), read by `kops plan --sizes`, `kops rebalance` and `kops sizes show`.

A row from another tool needs only `topic`, `partition` and `bytes`. Sizes drive batching and estimates, so a
bad row is an error naming the file, the line and the field, never a row silently dropped.

This declaration is the row's only one: the reader's conversion to `PartitionSize` (kops/model/sizes.py) and
the writer's back are derived from it (kops/formats/binding.py), and so are the Spark job's output columns,
their order and their Spark types (`spark_columns`, which the job calls on its driver only: its executors import
neither pydantic nor this module).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from kops.formats.base import Doc, Id, Long, Number, Size, Text
from kops.jsondoc import INT32
from kops.model.sizes import PartitionSize


class SizesRowDoc(Doc):
    """One partition's summary (Spark omits null fields from JSON lines)."""

    domain = PartitionSize

    topic: Text
    partition: Id
    bytes: Size = Field(description="the partition's size at its latest sample (largest replica)")
    growth_bytes_per_s: Number | None = Field(default=None, exclude_if=lambda v: v is None, description=(
        "net growth over the window, bytes/s: the change in size of the partition's longest-observed replica "
        "÷ the time it was observed; negative when retention shrank it. What the planner sizes a later batch's "
        "moves with (before `write_bytes_per_s` existed, this field held the sum of the increases)"))
    write_bytes_per_s: Number | None = Field(default=None, exclude_if=lambda v: v is None, ge=0, description=(
        "write rate, bytes/s: per replica, the sum of the increases between its consecutive samples (its "
        "broker's own sample times; a decrease is retention or truncation, never growth) ÷ the time its samples "
        "cover; the largest over the replicas. A replica that appears in the window (rebuilt by a move) counts "
        "only what grows beyond the other replicas' size when it appeared: its copy is not writes. Network in, "
        "on every replica"))
    peak_bytes: Size | None = Field(default=None, exclude_if=lambda v: v is None,
                                    description="the largest size seen in the window")
    remote_bytes: Size | None = Field(default=None, exclude_if=lambda v: v is None, description=(
        "tiered storage (KIP-405): the partition's bytes in remote storage (Kafka's RemoteLogSizeBytes metric); "
        "`bytes` stays the local log, what a move copies and what sits on the broker's disk"))
    samples: Size | None = Field(default=None, exclude_if=lambda v: v is None,
                                 description="sample times the summary saw for it")
    last_seen: Long | None = Field(default=None, exclude_if=lambda v: v is None,
                                   description="the latest sample, milliseconds since the epoch")


def spark_columns() -> tuple[tuple[str, str, bool], ...]:
    """(column, Spark SQL type, required) of every field, in the declaration's order: an integer whose range
    fits 32 bits is `int`, another `bigint`; a number `double`; a string `string`."""
    schema = SizesRowDoc.model_json_schema()
    required = set(schema.get("required", ()))
    return tuple((name, _spark_type(field), name in required) for name, field in schema["properties"].items())


def _spark_type(field: dict[str, Any]) -> str:
    kinds = [f for f in field.get("anyOf", [field]) if f.get("type") != "null"]
    kind = kinds[0]
    if kind["type"] == "integer":
        return "int" if kind.get("maximum", INT32[1] + 1) <= INT32[1] else "bigint"
    return {"number": "double", "string": "string"}[kind["type"]]
