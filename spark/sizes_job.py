"""Partition sizes from raw observations: the PySpark job behind `kops sizes summarize`.

Runs unchanged under spark-submit (it imports PySpark, the standard library and `kops.units`, so the driver
needs kops installed: `pip install kops`, or `--py-files` with the kops package):

    spark-submit spark/sizes_job.py INPUT... --out PATH [--since 7d] [--format json|parquet]

Inputs (local paths, folders, globs, or anything Spark reads: s3a://, hdfs://):
* kafka-log-dirs.sh --describe output: the JSON document, possibly after the tool's two status lines, one per
  file, or JSON lines (one document per line). A document's time is its `timestamp` field (milliseconds) if the
  collector added one, else an ISO-8601 basic timestamp in the file name (`logdirs-20261120T101500Z.json`), else
  the file's modification time. Files ending in .json, .jsonl, .log or .txt.
* CSV exports of per-replica size metrics: `timestamp,broker,topic,partition,bytes` (header optional),
  timestamp ISO-8601 or epoch milliseconds. Files ending in .csv.

Output under PATH: `partitions/` with one row per topic-partition — `bytes` (the latest sample, max over the
replicas; future replicas of intra-broker moves and log dirs in error excluded), `growth_bytes_per_s` (the sum
of the increases between consecutive samples over the window: a retention drop is a decrease and never makes
it negative), `peak_bytes`, `samples`, `last_seen` (ms) — and `brokers/` with bytes per broker and log dir at
each broker's latest sample. Malformed documents and rows are counted per file and reported, never fatal.

The transforms (`read_log_dirs`, `read_csv`, `summarize_partitions`, `summarize_brokers`) are importable; the
planner reads the output without Spark (`kops.sizes.reader`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
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
    raw = raw.filter(~((F.lower(F.trim(F.col("timestamp"))) == "timestamp") & (F.lower(F.trim(F.col("topic"))) == "topic")))
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
    problems = typed.filter(~good).select("file", F.lit("malformed CSV row (want timestamp,broker,topic,partition,bytes)").alias("problem"))
    return Inputs(samples, problems)


def split_inputs(inputs: list[str]) -> tuple[list[str], list[str]]:
    """(log-dirs paths, CSV paths): by suffix for files; folders and globs are read by both readers, each
    keeping only its own files."""
    log_dirs, csv = [], []
    for path in inputs:
        lower = path.lower()
        if lower.endswith(".csv"):
            csv.append(path)
        elif lower.endswith(LOG_DIR_SUFFIXES):
            log_dirs.append(path)
        else:
            log_dirs.append(path)
            csv.append(path)
    return log_dirs, csv


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


def summarize_partitions(samples: DataFrame) -> DataFrame:
    """One row per topic-partition: bytes, growth_bytes_per_s, peak_bytes, samples, last_seen."""
    per_time = (usable(samples).repartition("topic", "partition")
                .groupBy("topic", "partition", "ts").agg(F.max("bytes").alias("size")))
    ordered = Window.partitionBy("topic", "partition").orderBy("ts")
    steps = per_time.withColumn("rise", F.greatest(F.col("size") - F.lag("size").over(ordered), F.lit(0)))
    return (steps.groupBy("topic", "partition").agg(
        F.max_by("size", "ts").alias("bytes"),
        F.max("size").alias("peak_bytes"),
        F.count(F.lit(1)).alias("samples"),
        F.min("ts").alias("first_seen"),
        F.max("ts").alias("last_seen"),
        F.sum(F.coalesce("rise", F.lit(0))).alias("risen"),
    ).select(
        "topic", "partition", "bytes",
        F.when(F.col("last_seen") > F.col("first_seen"),
               F.col("risen") / ((F.col("last_seen") - F.col("first_seen")) / 1000.0)).otherwise(F.lit(0.0))
        .alias("growth_bytes_per_s"),
        "peak_bytes", "samples", "last_seen",
    ))


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

def run(spark: SparkSession, inputs: list[str], out: str, since: str | None = None, fmt: str = "json",
        progress: Callable[[str], None] = lambda _line: None) -> Report:
    log_dir_paths, csv_paths = split_inputs(inputs)
    progress(f"stage 1/4: reading {len(inputs)} input(s)")
    log_dirs = read_log_dirs(spark, log_dir_paths)
    exported = read_csv(spark, csv_paths)
    samples = log_dirs.samples.unionByName(exported.samples)
    samples = within(samples, parse_duration(since) if since else None).cache()
    report = Report(samples=samples.count())
    problems = log_dirs.problems.unionByName(exported.problems)
    for row in problems.groupBy("file").agg(F.count(F.lit(1)).alias("n"), F.first("problem").alias("first")).collect():
        report.malformed[row["file"]] = int(row["n"])
        report.examples[row["file"]] = row["first"]
    if report.samples == 0:
        samples.unpersist()
        return report
    progress(f"stage 2/4: {report.samples} samples; summarising partitions")
    partitions = summarize_partitions(samples)
    writer = partitions.write.mode("overwrite")
    (writer.parquet if fmt == "parquet" else writer.json)(f"{out.rstrip('/')}/partitions")
    progress("stage 3/4: summarising brokers")
    brokers = summarize_brokers(samples)
    writer = brokers.coalesce(1).write.mode("overwrite")
    (writer.parquet if fmt == "parquet" else writer.json)(f"{out.rstrip('/')}/brokers")
    progress("stage 4/4: counting")
    report.partitions = spark.read.format(fmt).load(f"{out.rstrip('/')}/partitions").count()
    report.brokers = brokers.select("broker").distinct().count()
    samples.unpersist()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Summarise Kafka partition sizes (kops).")
    parser.add_argument("inputs", nargs="+")
    parser.add_argument("--out", required=True)
    parser.add_argument("--since")
    parser.add_argument("--format", choices=("json", "parquet"), default="json")
    args = parser.parse_args(argv)
    spark = SparkSession.builder.appName("kops-sizes").getOrCreate()
    try:
        report = run(spark, args.inputs, args.out, args.since, args.format,
                     lambda line: print(line, file=sys.stderr, flush=True))
    finally:
        spark.stop()
    for file, count in sorted(report.malformed.items()):
        print(f"{file}: {count} malformed ({report.examples[file]})", file=sys.stderr)
    if report.samples == 0:
        print("no samples in the inputs", file=sys.stderr)
        return 1
    print(json.dumps({"partitions": report.partitions, "brokers": report.brokers, "samples": report.samples,
                      "malformed": sum(report.malformed.values())}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
