"""`kops sizes collect` (samples from a live cluster), `import` and `summarize` (the Spark job), `show` (the summary,
without Spark)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from kops.cli import console
from kops.cli.options import BootstrapServer, CommandConfig, ConnectTimeout, Format, OutputFormat
from kops.cli.spark_run import require_spark_extra, sizes_job, spark_session, stage_progress
from kops.cli.state import write_atomically
from kops.errors import KopsError, UsageError
from kops.sizes.reader import read_sizes
from kops.sizes.store import append_report, is_store
from kops.sizes.store import create as create_store
from kops.units import format_size, parse_duration
from kops.zk_layout.codecs.log_dirs import encode_log_dirs

app = typer.Typer(help="Partition sizes: summarise raw observations with Spark, show the summary.",
                  no_args_is_help=True)


def _check_inputs(inputs: list[str], since: str | None) -> None:
    if since is not None:
        try:
            parse_duration(since)
        except ValueError as exc:
            raise UsageError(f"--since: {exc}") from None
    for path in inputs:
        remote = "://" in path or path.startswith("store:") or any(c in path for c in "*?[{")
        if not remote and not Path(path).exists():
            raise UsageError("no such file or folder", where=path)


def _said(report: Any) -> None:
    for file, count in sorted(report.malformed.items()):
        console.warning(f"{file}: {count} malformed ({report.examples[file]})")


@app.command("summarize")
def summarize(
    inputs: Annotated[list[str], typer.Argument(help="kafka-log-dirs JSON files, CSV exports, sample stores (kops "
                                                     "sizes collect --store / import), folders, globs, s3a:// or "
                                                     "hdfs:// paths.", show_default=False)],
    out: Annotated[str, typer.Option("--out", "-o", help="Where to write the summary (partitions/ and brokers/).")],
    master: Annotated[str, typer.Option("--master", help="Spark master URL: local[*], spark://HOST:PORT, yarn, "
                                                         "k8s://...")] = "local[*]",
    since: Annotated[str | None, typer.Option("--since", help="Only samples this recent, e.g. 7d, 12h (before the "
                                                              "latest sample).")] = None,
    parquet: Annotated[bool, typer.Option("--parquet", help="Write Parquet instead of JSON lines.")] = False,
    incremental: Annotated[bool, typer.Option("--incremental", help="One sample store as input: merge only the samples "
                                                                    "newer than the last summary into the state kept "
                                                                    "under --out (a local folder).")] = False,
    driver_memory: Annotated[str | None, typer.Option("--driver-memory", help=(
        "Spark driver memory, e.g. 4g (default: a third of this machine's memory, 1g to 6g, in local mode; Spark's "
        "own default elsewhere)."), show_default=False)] = None,
) -> None:
    """Run the PySpark job (spark/sizes_job.py, also runnable with spark-submit) over raw partition-size
    observations: per partition the latest size (max over replicas; future replicas and failed log dirs
    excluded), the write rate (the sum of the increases of each replica's own series over the time it covers,
    the largest of them: retention drops and a moved replica's copy are not writes), the net growth, peak,
    samples and last seen; per broker the bytes per log dir. Malformed documents are counted and named, never fatal.

    With --incremental the input is one sample store and the summary's state (each replica's series, peak, last
    seen) is kept under --out: each run reads only the samples newer than the last, so a five-minute cron costs
    seconds, and the result equals a full summary of the same samples.

    Examples:

    \b
      kops sizes summarize .kops/lab/logdirs --out sizes/lab
      # from cron, after collect --store
      kops sizes summarize sizes/store --out sizes/summary --incremental
      kops sizes summarize 's3a://ops/logdirs/2026-11-*' --out s3a://ops/sizes \\
          --master spark://spark:7077 --since 7d

    Exit codes: 0 written, 1 no samples in the inputs, a Spark failure, or PySpark not installed (kops's Spark
    extra: pip install 'kops[spark]').
    """
    _check_inputs(inputs, since)
    if incremental and (len(inputs) != 1 or not is_store(inputs[0]) or since or "://" in out):
        raise UsageError("--incremental takes one local sample store as input, a local --out, and no --since",
                         hint="make a store with `kops sizes collect --store` or `kops sizes import`")
    job = sizes_job("kops sizes summarize")  # Spark only loads for the command that runs it
    fmt = "parquet" if parquet else "json"
    with spark_session(master, driver_memory) as spark, stage_progress("summarising") as said:
        report = (job.run_incremental(spark, inputs[0], out, fmt, said) if incremental
                  else job.run(spark, inputs, out, since, fmt, said))
    _said(report)
    if report.samples == 0 and not incremental:
        raise KopsError("no samples in the inputs", hint="point at kafka-log-dirs JSON files or size CSV exports")
    what = "new samples merged" if incremental else "samples summarised"
    console.info(f"{report.samples} {what}: {report.partitions} partitions, {report.brokers} brokers -> {out}")


@app.command("import")
def import_(
    inputs: Annotated[list[str], typer.Argument(help="kafka-log-dirs JSON files, CSV exports, folders, "
                                                     "globs.", show_default=False)],
    store: Annotated[str, typer.Option("--store", help="The sample store to append to (made if missing).")],
    master: Annotated[str, typer.Option("--master", help="Spark master URL.")] = "local[*]",
    driver_memory: Annotated[str | None, typer.Option("--driver-memory", help=(
        "Spark driver memory, e.g. 4g (default: a third of this machine's memory, 1g to 6g, in local mode; Spark's "
        "own default elsewhere)."), show_default=False)] = None,
) -> None:
    """Append kafka-log-dirs documents and CSV exports to a sample store (Parquet, partitioned by day), which
    `kops sizes summarize` then reads much faster than the documents themselves. Malformed rows are counted and
    named, and the good rows go on.

    Examples:

    \b
      kops sizes import sizes/raw/*.json exports/sizes-*.csv --store sizes/store
    """
    _check_inputs(inputs, None)
    if "://" not in store:
        create_store(Path(store))
    job = sizes_job("kops sizes import")  # Spark only loads for the command that runs it
    with spark_session(master, driver_memory) as spark, stage_progress("importing") as said:
        report = job.import_samples(spark, inputs, store, said)
    _said(report)
    if report.samples == 0:
        raise KopsError("no samples in the inputs", hint="point at kafka-log-dirs JSON files or size CSV exports")
    console.info(f"imported {report.samples} samples into {store}")


@app.command("collect")
def collect(
    bootstrap_server: BootstrapServer = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the samples (one kafka-log-dirs document "
                                                          "each).")] = Path("sizes/raw"),
    store: Annotated[Path | None, typer.Option("--store", help="Append each sample to this sample store (Parquet, "
                                                               "partitioned by day) instead of writing "
                                                               "documents.")] = None,
    command_config: CommandConfig = None,
    every: Annotated[str | None, typer.Option("--every", help="Sample this often (e.g. 5m) instead of once.")] = None,
    for_: Annotated[str | None, typer.Option("--for", help="With --every: for how long (e.g. 1h); default until "
                                                           "Ctrl-C.")] = None,
    connect_timeout: ConnectTimeout = 10.0,
) -> None:
    """Sample a live cluster's partition sizes through the Admin API (DescribeLogDirs) into kafka-log-dirs
    documents, the same JSON kafka-log-dirs.sh --describe prints plus a timestamp, one file per sample
    (log-dirs-<UTC time>.json), so `kops sizes summarize` reads them unchanged; with --store, into a sample
    store instead (one Parquet file per sample), which Spark reads far faster at scale and `kops sizes
    summarize --incremental` follows. One sample per run without --every: cron-friendly.

    Examples:

    \b
      # from cron, every 5 minutes
      kops sizes collect -b broker1:9092 --out sizes/raw
      # the same, into the sample store
      kops sizes collect -b broker1:9092 --store sizes/store
      kops sizes collect -b broker1:9092 --out sizes/raw --every 5m --for 1h
    """
    if not bootstrap_server:
        raise UsageError("say which cluster: -b HOST:PORT[,HOST:PORT...]")
    if store is not None:
        require_spark_extra("kops sizes collect --store", "pyarrow")
    interval = _duration(every, "--every") if every else None
    total = _duration(for_, "--for") if for_ else None
    from kops.cluster.admin.connection import AdminSettings, admin_session, read_properties  # kafka-python: here only
    from kops.cluster.admin.log_dirs import describe_log_dirs

    properties = read_properties(command_config) if command_config else {}
    settings = AdminSettings(bootstrap_server, properties, connect_timeout_ms=int(connect_timeout * 1000))
    deadline = None if total is None else time.monotonic() + total
    with admin_session(settings) as client:
        while True:
            started = time.monotonic()
            now = time.time()
            report = describe_log_dirs(client, bootstrap_server, int(now * 1000))
            if store is not None:
                written, replicas = append_report(store, report, int(now * 1000))
            else:
                written = out / time.strftime("log-dirs-%Y%m%dT%H%M%SZ.json", time.gmtime(now))
                write_atomically(written, json.dumps(encode_log_dirs(report), separators=(",", ":")).encode())
                replicas = sum(len(d.replicas) for b in report.brokers for d in b.log_dirs)
            console.info(f"wrote {written}: {replicas} replicas on {len(report.brokers)} brokers")
            if interval is None or (deadline is not None and time.monotonic() + interval > deadline):
                return
            time.sleep(max(0.0, interval - (time.monotonic() - started)))


def _duration(text: str, option: str) -> float:
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None
    if seconds <= 0:
        raise UsageError(f"{option} must be positive")
    return seconds


@app.command("show")
def show(
    path: Annotated[Path, typer.Argument(help="A summary written by kops sizes summarize.", show_default=False)],
    top: Annotated[int | None, typer.Option("--top", "-n", help="Only the N largest partitions (0 = all). Default: 20 "
                                                                "in text, all in JSON.", min=0)] = None,
    output_format: Format = OutputFormat.text,
) -> None:
    """Show a sizes summary, largest partitions first, without starting Spark.

    Examples:

    \b
      kops sizes show sizes/lab --top 10
      kops sizes show sizes/lab --format json | jq '.[0]'
    """
    sizes = read_sizes(path)
    ordered = sorted(sizes.rows.items(), key=lambda kv: (-sizes.bytes[kv[0]], kv[0]))
    if top is None:  # a machine expects every row unless it asks for fewer
        top = 0 if output_format is OutputFormat.json else 20
    if top:
        ordered = ordered[:top]
    if output_format is OutputFormat.json:
        console.print_json([{"topic": tp.topic, "partition": tp.partition, "bytes": sizes.bytes[tp],
                             "growth_bytes_per_s": float(row.growth_bytes_per_s or 0.0),
                             "write_bytes_per_s": sizes.write.get(tp, 0.0),
                             **{k: getattr(row, k) for k in ("peak_bytes", "samples", "last_seen")
                                if getattr(row, k) is not None}}
                            for tp, row in ordered])
        return
    table = console.table(f"Partition sizes ({len(sizes.bytes)} partitions, "
                          f"{format_size(sum(sizes.bytes.values()))})", "Partition", ">Size", ">Writes/s", ">Growth/s",
                          ">Peak", ">Samples")
    for tp, row in ordered:
        growth = float(row.growth_bytes_per_s or 0)
        table.add_row(str(tp), format_size(sizes.bytes[tp]), format_size(sizes.write.get(tp, 0.0)),
                      ("-" if growth < 0 else "") + format_size(abs(growth)),
                      format_size(row.peak_bytes or sizes.bytes[tp]), str("" if row.samples is None else row.samples))
    console.out.print(table)
