"""Partition sizes from raw observations: the PySpark job behind `kops sizes summarize`.

Runs unchanged under spark-submit (it imports PySpark, the standard library and `kops.units`; the driver also
reads the summary row's declaration, kops/formats/sizes.py, so it needs kops installed: `pip install kops`, or
`--py-files` with the kops package; executors need only `kops.units`):

    spark-submit spark/sizes_job.py INPUT... --out PATH [--since 7d] [--format json|parquet]

Inputs (local paths, folders, globs, or anything Spark reads: s3a://, hdfs://):
* kafka-log-dirs.sh --describe output: the JSON document, possibly after the tool's two status lines, one per
  file, or JSON lines (one document per line). A document's time is its `timestamp` field (milliseconds) if the
  collector added one, else an ISO-8601 basic timestamp in the file name (`logdirs-20261120T101500Z.json`), else
  the file's modification time. Files ending in .json, .jsonl, .log or .txt.
* CSV exports of per-replica size metrics: `timestamp,broker,topic,partition,bytes` (header optional),
  timestamp ISO-8601 or epoch milliseconds. Files ending in .csv.

Output under PATH: `partitions/` with one row per topic-partition — `bytes` (the latest sample, max over the
replicas; future replicas of intra-broker moves and log dirs in error excluded), `write_bytes_per_s` (per
replica series, in its broker's own sample times, the sum of the increases ÷ the time it covers — a decrease is
retention, a rebuilt replica's copy is not writes — the largest over the replicas), `growth_bytes_per_s` (the
net growth of the longest-observed replica), `peak_bytes`, `samples`, `last_seen` (ms) — and `brokers/` with bytes per
broker and log dir at
each broker's latest sample. Malformed documents and rows are counted per file and reported, never fatal.

The transforms (`read_log_dirs`, `read_csv`, `summarize_partitions`, `summarize_brokers`) are importable; the
planner reads the output without Spark (`kops.sizes.reader`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kops import units  # pure, no dependencies: the driver needs kops installed (pip install kops)

LOG_DIR_SUFFIXES = (".json", ".jsonl", ".log", ".txt")
LOG_DIR_GLOB = "*.{json,jsonl,log,txt}"
BASIC_TIMESTAMP = re.compile(r"(\d{8}T\d{6}(?:\.\d+)?Z)")

SAMPLES = T.StructType([
    T.StructField("ts", T.LongType(), False),  # epoch milliseconds
    T.StructField("broker", T.IntegerType(), False),
    T.StructField("log_dir", T.StringType(), True),
    T.StructField("topic", T.StringType(), False),
    T.StructField("partition", T.IntegerType(), False),
    T.StructField("bytes", T.LongType(), False),
    T.StructField("future", T.BooleanType(), False),
    T.StructField("dir_error", T.BooleanType(), False),
])
PROBLEMS = T.StructType([T.StructField("file", T.StringType(), False), T.StructField("problem", T.StringType(), False)])
CSV_SCHEMA = T.StructType([
    T.StructField("timestamp", T.StringType(), True),
    T.StructField("broker", T.StringType(), True),
    T.StructField("topic", T.StringType(), True),
    T.StructField("partition", T.StringType(), True),
    T.StructField("bytes", T.StringType(), True),
])


@dataclass
class Inputs:
    """The samples read, and what could not be read (file, problem) — counted, never dropped silently."""

    samples: DataFrame
    problems: DataFrame


@dataclass
class Report:
    partitions: int = 0
    brokers: int = 0
    samples: int = 0
    malformed: dict[str, int] = field(default_factory=dict)  # file -> count
    examples: dict[str, str] = field(default_factory=dict)  # file -> first problem


# -- log-dirs documents ----------------------------------------------------------------------------------------

def _time_from_name(path: str) -> int | None:
    found = BASIC_TIMESTAMP.search(path.rsplit("/", 1)[-1])
    if not found:
        return None
    text = found.group(1)
    fmt = "%Y%m%dT%H%M%S.%fZ" if "." in text else "%Y%m%dT%H%M%SZ"
    try:
        return int(dt.datetime.strptime(text, fmt).replace(tzinfo=dt.UTC).timestamp() * 1000)
    except ValueError:
        return None


def _documents(text: str) -> Iterator[tuple[int, Any]]:
    """(line, parsed document or an error string) for a whole file: one document (after the tool's status
    lines) or JSON lines."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("{")), None)
    if start is None:
        yield 1, "no JSON document in the file"
        return
    body = "\n".join(lines[start:])
    try:
        yield start + 1, json.loads(body)
        return
    except json.JSONDecodeError:
        pass
    for number, line in enumerate(lines[start:], start + 1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, f"line {number}: not JSON ({exc.msg})"


def parse_log_dirs(path: str, mtime_ms: int, text: str) -> Iterator[tuple[str, Any]]:
    """("row", sample tuple) for every replica of every document, ("problem", message) for what is malformed."""
    named = _time_from_name(path)
    for number, doc in _documents(text):
        if isinstance(doc, str):
            yield "problem", doc
            continue
        try:
            brokers = doc["brokers"]
            ts = doc.get("timestamp")
            ts = int(ts) if isinstance(ts, (int, float)) and not isinstance(ts, bool) else (named or mtime_ms)
            rows = []
            for b in brokers:
                broker = int(b["broker"])
                for d in b.get("logDirs") or []:
                    error = d.get("error") not in (None, "", "NONE")
                    for p in d.get("partitions") or []:
                        topic, _, number_text = str(p["partition"]).rpartition("-")
                        if not topic or not number_text.isdigit():
                            raise ValueError(f"partition name {p['partition']!r} is not topic-partition")
                        rows.append((ts, broker, d.get("logDir"), topic, int(number_text), int(p["size"]),
                                     bool(p.get("isFuture", False)), error))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            yield "problem", f"line {number}: not a kafka-log-dirs document ({type(exc).__name__}: {exc})"
            continue
        for row in rows:
            yield "row", row


def read_log_dirs(spark: SparkSession, paths: list[str]) -> Inputs:
    if not paths:
        return Inputs(spark.createDataFrame([], SAMPLES), spark.createDataFrame([], PROBLEMS))
    files = (spark.read.format("binaryFile").option("pathGlobFilter", LOG_DIR_GLOB)
             .option("recursiveFileLookup", "true").load(paths))

    def parse(rows: Iterable[Any]) -> Iterator[tuple[str, str, Any]]:
        for r in rows:
            try:
                text = bytes(r.content).decode("utf-8")
            except UnicodeDecodeError:
                yield "problem", r.path, "not UTF-8 text"
                continue
            mtime = int(r.modificationTime.timestamp() * 1000)
            for kind, value in parse_log_dirs(r.path, mtime, text):
                yield kind, r.path, value

    parsed = files.select("path", "modificationTime", "content").rdd.mapPartitions(parse).cache()
    samples = spark.createDataFrame(parsed.filter(lambda x: x[0] == "row").map(lambda x: x[2]), SAMPLES)
    problems = spark.createDataFrame(parsed.filter(lambda x: x[0] == "problem").map(lambda x: (x[1], x[2])), PROBLEMS)
    return Inputs(samples, problems)


# -- CSV exports -----------------------------------------------------------------------------------------------

def read_csv(spark: SparkSession, paths: list[str]) -> Inputs:
    """Native CSV reading (no Python per row): 20 million rows stay in the JVM."""
    if not paths:
        return Inputs(spark.createDataFrame([], SAMPLES), spark.createDataFrame([], PROBLEMS))
    raw = (spark.read.schema(CSV_SCHEMA).option("header", "false").option("mode", "PERMISSIVE")
           .option("pathGlobFilter", "*.csv").option("recursiveFileLookup", "true").csv(paths)
           .withColumn("file", F.input_file_name()))
    raw = raw.filter(~((F.lower(F.trim(F.col("timestamp"))) == "timestamp")
                       & (F.lower(F.trim(F.col("topic"))) == "topic")))
    # try_cast / try_to_timestamp: a bad value is NULL (then counted), never an error (Spark 4 is ANSI by default)
    ts = F.expr("CASE WHEN trim(timestamp) RLIKE '^[0-9]+$' THEN try_cast(trim(timestamp) AS BIGINT) "
                "ELSE CAST(unix_micros(try_to_timestamp(trim(timestamp))) / 1000 AS BIGINT) END")
    typed = raw.select(
        "file",
        ts.alias("ts"),
        F.expr("try_cast(trim(broker) AS INT)").alias("broker"),
        F.trim(F.col("topic")).alias("topic"),
        F.expr("try_cast(trim(partition) AS INT)").alias("partition"),
        F.expr("try_cast(trim(bytes) AS BIGINT)").alias("bytes"),
    )
    good = (F.col("ts").isNotNull() & F.col("broker").isNotNull() & F.col("topic").isNotNull()
            & (F.length("topic") > 0) & F.col("partition").isNotNull() & (F.col("partition") >= 0)
            & F.col("bytes").isNotNull() & (F.col("bytes") >= 0))
    samples = typed.filter(good).select(
        "ts", "broker", F.lit(None).cast("string").alias("log_dir"), "topic", "partition", "bytes",
        F.lit(False).alias("future"), F.lit(False).alias("dir_error"))
    problems = typed.filter(~good).select("file",
                                          F.lit("malformed CSV row (want "
                                                "timestamp,broker,topic,partition,bytes)").alias("problem"))
    return Inputs(samples, problems)


def split_inputs(inputs: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(log-dirs paths, CSV paths, sample stores): by suffix for files; a folder holding the store's marker (or a
    `store:` prefix, for stores Spark reads remotely) is a store; other folders and globs are read by both
    readers, each keeping only its own files."""
    log_dirs, csv, stores = [], [], []
    for path in inputs:
        lower = path.lower()
        if path.startswith(STORE_PREFIX) or os.path.isfile(os.path.join(path, STORE_MARKER)):
            stores.append(path.removeprefix(STORE_PREFIX))
        elif lower.endswith(".csv"):
            csv.append(path)
        elif lower.endswith(LOG_DIR_SUFFIXES):
            log_dirs.append(path)
        else:
            log_dirs.append(path)
            csv.append(path)
    return log_dirs, csv, stores


# -- the sample store (kops/sizes/store.py writes it too) -------------------------------------------------------

STORE_MARKER = "kops-sizes-store.json"
STORE_PREFIX = "store:"
STORE_COLUMNS = ("ts", "broker", "log_dir", "topic", "partition", "bytes", "future")


def read_stores(spark: SparkSession, stores: list[str], after_ms: int | None = None) -> DataFrame:
    """The stores' samples; with `after_ms`, only newer ones (whole days before it are never read)."""
    frames = []
    for store in stores:
        frame = spark.read.parquet(f"{store.rstrip('/')}/samples")
        if after_ms is not None:
            frame = frame.filter((F.col("day") >= day_of(after_ms)) & (F.col("ts") > after_ms))
        frames.append(frame.select(*STORE_COLUMNS, F.lit(False).alias("dir_error")))
    if not frames:
        return spark.createDataFrame([], SAMPLES)
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def day_of(ts_ms: int) -> str:
    return dt.datetime.fromtimestamp(ts_ms / 1000, dt.UTC).strftime("%Y-%m-%d")


def append_to_store(samples: DataFrame, store: str) -> None:
    """Samples into the store, partitioned by UTC day; replicas in a failed log dir are not kept."""
    (samples.filter(~F.col("dir_error")).select(*STORE_COLUMNS)
     .withColumn("day", F.date_format(F.timestamp_millis("ts"), "yyyy-MM-dd"))
     .write.mode("append").partitionBy("day").parquet(f"{store.rstrip('/')}/samples"))


# -- summaries -------------------------------------------------------------------------------------------------

def parse_duration(text: str) -> int:
    """`7d`, `12h`, `30m`, `90s` (or plain seconds) as milliseconds."""
    return int(units.parse_duration(text) * 1000)


def usable(samples: DataFrame) -> DataFrame:
    """Replica sizes that count: not a future replica of an intra-broker move, not in a log dir in error."""
    return samples.filter(~F.col("future") & ~F.col("dir_error"))


def within(samples: DataFrame, since_ms: int | None) -> DataFrame:
    if since_ms is None:
        return samples
    row = samples.agg(F.max("ts")).first()
    latest = None if row is None else row[0]
    return samples if latest is None else samples.filter(F.col("ts") >= latest - since_ms)


TP = ("topic", "partition")
SERIES = (*TP, "broker", "log_dir")  # one replica: its sizes form one series, in its broker's own sample times


@dataclass
class State:
    """What the summary needs to go on from here. `partitions`, per topic-partition: `bytes` (the largest size at
    `last_seen`), `peak_bytes`, `samples` (sample times), `first_seen`, `last_seen`. `replicas`, per replica
    series: `first_seen`, `last_seen`, `size` (at `last_seen`), `risen` and `dropped` (the sums of its increases
    and decreases), and `target` while it is a replica rebuilt by a move still copying (else null)."""

    partitions: DataFrame
    replicas: DataFrame


def replica_rows(samples: DataFrame) -> DataFrame:
    """One size per replica series and sample time (a log dir unknown to the input, as in CSV, is '')."""
    return (usable(samples).withColumn("log_dir", F.coalesce("log_dir", F.lit("")))
            .repartition(*TP).groupBy(*SERIES, "ts").agg(F.max("bytes").alias("size")))


def _partition_totals(rows: DataFrame) -> DataFrame:
    return rows.groupBy(*TP).agg(
        F.max(F.struct("ts", "size")).getField("size").alias("bytes"), F.max("size").alias("peak_bytes"),
        F.countDistinct("ts").alias("samples"), F.min("ts").alias("first_seen"), F.max("ts").alias("last_seen"))


def _newcomers(rows: DataFrame, partitions: DataFrame, previous: State | None) -> DataFrame:
    """(SERIES, ts, size) of the virtual first sample of each replica that appeared after its partition was
    first seen (a replica rebuilt by a move, or an intra-broker move's new log dir): the largest of the other
    replicas' latest sizes at or before its first sample. Its copy up to that size is not writes."""
    firsts = rows.groupBy(*SERIES).agg(F.min("ts").alias("start"))
    known = rows.select(*SERIES, "ts", "size")
    if previous is not None:
        firsts = firsts.join(previous.replicas.select(*SERIES), list(SERIES), "left_anti")
        known = known.unionByName(previous.replicas.select(*SERIES, F.col("last_seen").alias("ts"), "size"))
    firsts = firsts.join(partitions.select(*TP, "first_seen"), list(TP)).filter(F.col("start") > F.col("first_seen"))
    n, o = firsts.alias("n"), known.alias("o")
    before = n.join(o, [F.col(f"n.{c}") == F.col(f"o.{c}") for c in TP]).filter(
        (F.col("o.ts") <= F.col("n.start"))
        & ((F.col("o.broker") != F.col("n.broker")) | (F.col("o.log_dir") != F.col("n.log_dir"))))
    latest = before.groupBy(*(F.col(f"n.{c}") for c in SERIES), F.col("o.broker").alias("other"),
                            F.col("o.log_dir").alias("other_dir")).agg(
        F.max(F.struct(F.col("o.ts").alias("ts"), F.col("o.size").alias("size"))).alias("last"))
    target = latest.groupBy(*SERIES).agg(
        F.max(F.struct(F.col("last.size").alias("size"), F.col("last.ts").alias("ts"))).alias("t"))
    return target.select(*SERIES, F.col("t.ts").alias("ts"), F.col("t.size").alias("size"))


def _steps(rows: DataFrame, partitions: DataFrame, previous: State | None) -> DataFrame:
    """Every sample of every replica series with its `rise` and `drop` from the series' previous size. A series
    goes on from its last size in `previous`; a rebuilt replica starts at its virtual first sample and, until its
    size first reaches that `target`, counts only what grows beyond it (and no decrease: its copy is not the
    partition's size)."""
    real = rows.select(*SERIES, "ts", "size", F.lit(None).cast("long").alias("floor"), F.lit("real").alias("kind"))
    virtual = _newcomers(rows, partitions, previous)
    seeds = virtual.select(*SERIES, "ts", "size", F.col("size").alias("floor"), F.lit("virtual").alias("kind"))
    if previous is not None:
        carried = previous.replicas.select(*SERIES, F.col("last_seen").alias("ts"), "size",
                                           F.col("target").alias("floor"), F.lit("state").alias("kind"))
        seeds = seeds.unionByName(carried.join(rows.select(*SERIES).distinct(), list(SERIES), "left_semi"))
    real_row = F.col("kind") == "real"
    series = Window.partitionBy(*SERIES)
    ordered = series.orderBy("ts", real_row)  # a seed before a sample of the same time (one collector, all brokers)
    marked = real.unionByName(seeds).withColumn("target", F.max("floor").over(series))
    caught = F.min(F.when(real_row & (F.col("size") >= F.col("target")), F.col("ts"))).over(series)
    filling = F.col("target").isNotNull() & (~real_row | F.col("caught").isNull() | (F.col("ts") < F.col("caught")))
    marked = marked.withColumn("caught", caught).withColumn("floor", F.when(filling, F.col("target")))
    prev, prev_floor = F.lag("size").over(ordered), F.lag("floor").over(ordered)
    return (marked.withColumn("rise", F.coalesce(F.greatest(F.col("size") - F.greatest(prev, prev_floor), F.lit(0)),
                                                 F.lit(0)))
            .withColumn("drop", F.when(prev_floor.isNull(), F.coalesce(F.greatest(prev - F.col("size"), F.lit(0)),
                                                                       F.lit(0))).otherwise(F.lit(0))))


def _series_state(steps: DataFrame) -> DataFrame:
    """Per series, what this run's samples add (a virtual first sample opens the series; a carried one does not)."""
    new = steps.filter(F.col("kind") != "state")
    real = F.col("kind") == "real"
    return new.groupBy(*SERIES).agg(
        F.min("ts").alias("first_seen"), F.max(F.when(real, F.col("ts"))).alias("last_seen"),
        F.max(F.when(real, F.struct("ts", "size"))).getField("size").alias("size"),
        F.sum("rise").alias("risen"), F.sum("drop").alias("dropped"),
        F.when(F.max(F.when(real, F.col("caught"))).isNull(), F.max("target")).alias("target"))


def partition_state(samples: DataFrame, previous: State | None = None) -> State:
    """The state of `samples`; with `previous`, `samples` must all be newer than it: each replica series goes on
    from its last known size, so merging equals summarising everything at once."""
    rows = replica_rows(samples)  # used four times in one plan: Spark reuses its shuffle
    partitions = _partition_totals(rows)
    if previous is not None:
        partitions = merge_states(previous.partitions, partitions)
    replicas = _series_state(_steps(rows, partitions, previous))
    if previous is not None:
        replicas = merge_series(previous.replicas, replicas)
    return State(partitions, replicas)


def merge_states(old: DataFrame, new: DataFrame) -> DataFrame:
    """A partitions state followed by a newer one."""
    o, n = old.alias("o"), new.alias("n")
    def both(name: str) -> tuple[Any, Any]:
        return F.col(f"o.{name}"), F.col(f"n.{name}")
    return o.join(n, list(TP), "full_outer").select(
        *TP,
        F.coalesce(both("bytes")[1], both("bytes")[0]).alias("bytes"),
        F.greatest(*both("peak_bytes")).alias("peak_bytes"),
        (F.coalesce(both("samples")[0], F.lit(0)) + F.coalesce(both("samples")[1], F.lit(0))).alias("samples"),
        F.least(*both("first_seen")).alias("first_seen"),
        F.greatest(*both("last_seen")).alias("last_seen"))


def merge_series(old: DataFrame, new: DataFrame) -> DataFrame:
    """A replicas state followed by a newer one (`new` already counts the step from `old`'s last size)."""
    o, n = old.alias("o"), new.alias("n")
    moved = F.col("n.last_seen").isNotNull()
    def total(name: str) -> Any:
        return (F.coalesce(F.col(f"o.{name}"), F.lit(0)) + F.coalesce(F.col(f"n.{name}"), F.lit(0))).alias(name)
    return o.join(n, list(SERIES), "full_outer").select(
        *SERIES, F.coalesce("o.first_seen", "n.first_seen").alias("first_seen"),
        F.coalesce("n.last_seen", "o.last_seen").alias("last_seen"), F.coalesce("n.size", "o.size").alias("size"),
        total("risen"), total("dropped"), F.when(moved, F.col("n.target")).otherwise(F.col("o.target")).alias("target"))


def summary_of(state: State) -> DataFrame:
    """One row per topic-partition: bytes, write_bytes_per_s (the largest of its replica series' rates: the sum
    of a series' increases over the time it covers), growth_bytes_per_s (the net growth of its longest series),
    peak_bytes, samples, last_seen."""
    covered = (F.col("last_seen") - F.col("first_seen")) / 1000.0
    rates = state.replicas.filter(F.col("last_seen") > F.col("first_seen")).select(
        *SERIES, (F.col("risen") / covered).alias("rate"), ((F.col("risen") - F.col("dropped")) / covered).alias("net"),
        covered.alias("covered"))
    best = rates.groupBy(*TP).agg(
        F.max(F.struct("rate", "covered", "broker", "log_dir")).getField("rate").alias("write_bytes_per_s"),
        F.max(F.struct("covered", "rate", "net", "broker", "log_dir")).getField("net").alias("growth_bytes_per_s"))
    return as_declared(state.partitions.join(best, list(TP), "left").select(
        *TP, "bytes", F.coalesce("growth_bytes_per_s", F.lit(0.0)).alias("growth_bytes_per_s"),
        F.coalesce("write_bytes_per_s", F.lit(0.0)).alias("write_bytes_per_s"), "peak_bytes", "samples", "last_seen"))


def as_declared(summary: DataFrame) -> DataFrame:
    """The summary's columns in the order and Spark types of the row kops reads, from its one declaration
    (kops/formats/sizes.py); a column the declaration lacks, or a required one missing, is a bug here. Called on
    the driver only, so executors import neither pydantic nor the declaration."""
    from kops.formats.sizes import spark_columns  # noqa: PLC0415 - driver only (see above)

    declared = spark_columns()
    unknown = sorted(set(summary.columns) - {name for name, _, _ in declared})
    missing = [name for name, _, required in declared if required and name not in summary.columns]
    if unknown or missing:
        raise ValueError(f"the summary's columns disagree with kops/formats/sizes.py: undeclared {unknown}, "
                         f"missing {missing}")
    return summary.select(*(F.col(name).cast(kind).alias(name) for name, kind, _ in declared
                            if name in summary.columns))


def summarize_partitions(samples: DataFrame) -> DataFrame:
    """One row per topic-partition: bytes, growth_bytes_per_s, write_bytes_per_s, peak_bytes, samples, last_seen."""
    return summary_of(partition_state(samples))


def summarize_brokers(samples: DataFrame) -> DataFrame:
    """Bytes per broker and log dir at each broker's latest sample (future replicas count: they are on disk)."""
    latest = samples.groupBy("broker").agg(F.max("ts").alias("ts"))
    replicas = (samples.join(latest, ["broker", "ts"]).filter(~F.col("dir_error"))
                .withColumn("log_dir", F.coalesce("log_dir", F.lit("(all)")))
                .groupBy("broker", "ts", "log_dir", "topic", "partition", "future")  # one sample per replica
                .agg(F.max("bytes").alias("bytes")))
    return (replicas.groupBy("broker", "log_dir")
            .agg(F.sum("bytes").alias("bytes"), F.count(F.lit(1)).alias("replicas"), F.max("ts").alias("ts"))
            .orderBy("broker", "log_dir"))


# -- the job ---------------------------------------------------------------------------------------------------

def read_inputs(spark: SparkSession, inputs: list[str]) -> Inputs:
    """Every sample of `inputs`: kafka-log-dirs documents, CSV exports and sample stores."""
    log_dir_paths, csv_paths, stores = split_inputs(inputs)
    log_dirs = read_log_dirs(spark, log_dir_paths)
    exported = read_csv(spark, csv_paths)
    samples = log_dirs.samples.unionByName(exported.samples).unionByName(read_stores(spark, stores))
    return Inputs(samples, log_dirs.problems.unionByName(exported.problems))


def _count_problems(report: Report, problems: DataFrame) -> None:
    for row in problems.groupBy("file").agg(F.count(F.lit(1)).alias("n"), F.first("problem").alias("first")).collect():
        report.malformed[row["file"]] = int(row["n"])
        report.examples[row["file"]] = row["first"]


def _write(frame: DataFrame, path: str, fmt: str) -> None:
    writer = frame.write.mode("overwrite")
    (writer.parquet if fmt == "parquet" else writer.json)(path)


def run(spark: SparkSession, inputs: list[str], out: str, since: str | None = None, fmt: str = "json",
        progress: Callable[[str], None] = lambda _line: None) -> Report:
    """The whole summary from every sample of `inputs` (within `since` of the latest)."""
    progress(f"stage 1/4: reading {len(inputs)} input(s)")
    read = read_inputs(spark, inputs)
    samples = within(read.samples, parse_duration(since) if since else None)
    if len(split_inputs(inputs)[2]) < len(inputs):
        samples = samples.cache()  # parsed text is worth keeping; a Parquet store is cheaper to scan again
    report = Report(samples=samples.count())
    _count_problems(report, read.problems)
    if report.samples == 0:
        samples.unpersist()
        return report
    progress(f"stage 2/4: {report.samples} samples; summarising partitions")
    _write(summarize_partitions(samples), f"{out.rstrip('/')}/partitions", fmt)
    progress("stage 3/4: summarising brokers")
    brokers = summarize_brokers(samples)
    _write(brokers.coalesce(1), f"{out.rstrip('/')}/brokers", fmt)
    progress("stage 4/4: counting")
    report.partitions = spark.read.format(fmt).load(f"{out.rstrip('/')}/partitions").count()
    report.brokers = spark.read.format(fmt).load(f"{out.rstrip('/')}/brokers").select("broker").distinct().count()
    samples.unpersist()
    return report


# -- the incremental summary -------------------------------------------------------------------------------------

STATE_FILE = "state.json"  # under OUT: {"format", "store", "current", "version", "watermark"}
STATE_FORMAT = "kops-sizes-state/2"  # /2: replica series (/1 had one series per partition)


def _state_pointer(out: str) -> dict[str, Any] | None:
    path = os.path.join(out, STATE_FILE)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as file:
        doc = json.load(file)
    if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT:
        raise ValueError(f"{path} is not a {STATE_FORMAT} state (make a new one: remove {out})")
    return doc


def merge_brokers(old: tuple[list[Any], Any] | None, new: DataFrame, spark: SparkSession) -> DataFrame:
    """Each broker's rows from its latest sample: the new summary's where it has the broker, else the old
    (`old`: the previous summary's rows and schema, collected before its folder is overwritten)."""
    if not old or not old[0]:
        return new
    previous = spark.createDataFrame(old[0], old[1])
    both = previous.select(*(F.col(c).cast(new.schema[c].dataType) for c in new.columns)).unionByName(new)
    latest = both.groupBy("broker").agg(F.max("ts").alias("latest"))
    return both.join(latest,
                     "broker").filter(F.col("ts") == F.col("latest")).drop("latest").orderBy("broker", "log_dir")


def run_incremental(spark: SparkSession, store: str, out: str, fmt: str = "json",
                    progress: Callable[[str], None] = lambda _line: None) -> Report:
    """Merge the store's samples newer than the last summary (its watermark) into the kept state and rewrite
    the summary from it: a five-minute cron reads five minutes of samples, not the week. Samples that arrive
    later than the watermark's day are not merged (the full summary reads them). `out` is a local folder."""
    pointer = _state_pointer(out)
    if pointer is not None and pointer.get("store") != os.path.abspath(store):
        raise ValueError(f"{out} summarises {pointer.get('store')}, not {store}")
    previous = None if pointer is None else read_state(spark, os.path.join(out, pointer["current"]))
    watermark = None if pointer is None else int(pointer["watermark"])
    progress(f"stage 1/4: reading the samples after {watermark or 'the start'}")
    samples = read_stores(spark, [store], after_ms=watermark).cache()
    report = Report(samples=samples.count())
    if report.samples == 0:
        samples.unpersist()
        report.partitions = 0 if previous is None else previous.partitions.count()
        return report
    progress(f"stage 2/4: {report.samples} new samples; merging them into the state")
    version = 1 if pointer is None else int(pointer["version"]) + 1
    current = f"state/v{version}"
    write_state(partition_state(samples, previous), os.path.join(out, current))
    state = read_state(spark, os.path.join(out, current))
    _write(summary_of(state), f"{out.rstrip('/')}/partitions", fmt)
    progress("stage 3/4: summarising brokers")
    old_brokers = None
    if pointer is not None and os.path.isdir(os.path.join(out, "brokers")):
        frame = spark.read.format(fmt).load(f"{out.rstrip('/')}/brokers")
        old_brokers = (frame.collect(), frame.schema)
    brokers = merge_brokers(old_brokers, summarize_brokers(samples), spark)
    _write(brokers.coalesce(1), f"{out.rstrip('/')}/brokers", fmt)
    progress("stage 4/4: moving the watermark")
    latest = samples.agg(F.max("ts")).first()[0]  # type: ignore[index]  # a global aggregate has one row
    _save_pointer(out, {"format": STATE_FORMAT, "store": os.path.abspath(store), "current": current,
                        "version": version, "watermark": max(int(latest), watermark or 0)})
    if pointer is not None:
        shutil.rmtree(os.path.join(out, pointer["current"]), ignore_errors=True)
    report.partitions = state.partitions.count()
    report.brokers = spark.read.format(fmt).load(f"{out.rstrip('/')}/brokers").select("broker").distinct().count()
    samples.unpersist()
    return report


def read_state(spark: SparkSession, folder: str) -> State:
    return State(spark.read.parquet(os.path.join(folder, "partitions")),
                 spark.read.parquet(os.path.join(folder, "replicas")))


def write_state(state: State, folder: str) -> None:
    state.partitions.write.mode("overwrite").parquet(os.path.join(folder, "partitions"))
    state.replicas.write.mode("overwrite").parquet(os.path.join(folder, "replicas"))


def _save_pointer(out: str, doc: dict[str, Any]) -> None:
    """Replace the state pointer atomically: a crash leaves the old state or the new one, never half."""
    path = os.path.join(out, STATE_FILE)
    with open(path + ".tmp", "w", encoding="utf-8") as file:
        json.dump(doc, file)
    os.replace(path + ".tmp", path)


def import_samples(spark: SparkSession, inputs: list[str], store: str,
                   progress: Callable[[str], None] = lambda _line: None) -> Report:
    """kafka-log-dirs documents and CSV exports appended to a sample store (malformed rows counted, as ever)."""
    progress(f"stage 1/2: reading {len(inputs)} input(s)")
    read = read_inputs(spark, inputs)
    samples = read.samples.cache()
    report = Report(samples=samples.count())
    _count_problems(report, read.problems)
    if report.samples:
        progress(f"stage 2/2: writing {report.samples} samples to {store}")
        append_to_store(samples, store)
    samples.unpersist()
    return report


def ensure_store(store: str) -> None:
    """A local folder becomes a sample store (its marker written); remote stores are the operator's to make."""
    if "://" in store:
        return
    os.makedirs(os.path.join(store, "samples"), exist_ok=True)
    marker = os.path.join(store, STORE_MARKER)
    if not os.path.exists(marker):
        with open(marker, "w", encoding="utf-8") as file:
            file.write(json.dumps({"format": "kops-sizes-store/1"}) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Summarise Kafka partition sizes (kops).")
    parser.add_argument("inputs", nargs="+", help="log-dirs documents, CSV exports, sample stores (store:URL)")
    parser.add_argument("--out", help="where the summary goes (partitions/, brokers/)")
    parser.add_argument("--since")
    parser.add_argument("--format", choices=("json", "parquet"), default="json")
    parser.add_argument("--incremental", action="store_true", help="one store as input: merge what is new")
    parser.add_argument("--import-to", metavar="STORE", help="append the inputs to a sample store instead")
    args = parser.parse_args(argv)
    if not args.out and not args.import_to:
        parser.error("say --out PATH (a summary) or --import-to STORE")
    spark = SparkSession.builder.appName("kops-sizes").config("spark.sql.session.timeZone", "UTC").getOrCreate()
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731 - a one-line callback
    try:
        if args.import_to:
            ensure_store(args.import_to)
            report = import_samples(spark, args.inputs, args.import_to, say)
        elif args.incremental:
            report = run_incremental(spark, args.inputs[0].removeprefix(STORE_PREFIX), args.out, args.format, say)
        else:
            report = run(spark, args.inputs, args.out, args.since, args.format, say)
    finally:
        spark.stop()
    for file, count in sorted(report.malformed.items()):
        print(f"{file}: {count} malformed ({report.examples[file]})", file=sys.stderr)
    if report.samples == 0 and not args.incremental:
        print("no samples in the inputs", file=sys.stderr)
        return 1
    print(json.dumps({"partitions": report.partitions, "brokers": report.brokers, "samples": report.samples,
                      "malformed": sum(report.malformed.values())}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
