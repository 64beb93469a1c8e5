"""Sizes job benchmark at a real cluster's scale: a week of 5-minute samples of 100,000 partitions (200M rows).

Data: 100,000 partitions (100 topics x 1,000), one row per partition per sample (5 minutes apart), each partition
growing at its own pace with a retention drop every 50th sample; written once per size as a sample store
(Parquet, partitioned by day, as `kops sizes collect --store` and `kops sizes import` write it) and, for the CSV
source, as one CSV export. Per size and source, each in a fresh process (so RSS is the run's own):
  parquet      the Spark job (spark/sizes_job.py, local[*], driver 6 GiB, kops's Spark session) over the store
  csv          the same job over the CSV export
  incremental  `summarize --incremental`: a week's state, then 5 minutes of new samples merged into it
and, in the same run, the single-process baseline (pandas/pyarrow: read, max per time, sort, positive increments,
aggregate) over the same input, in a process watched for memory (over --pandas-limit-gb it is stopped) and time.
The summaries are compared on every partition wherever the baseline finishes (bytes, peak, samples, last_seen
exactly; growth and write rate to 1e-9).

Targets (issue 19): 200M rows from Parquet <= 5 min, from CSV <= 15 min, driver <= 8 GiB; incremental update of
5 minutes of samples into a week's state <= 30 s; summaries identical to the baseline wherever it finishes.

Usage: python bench/spark_sizes.py [--rows 50000000,100000000,200000000] [--sources parquet,csv,incremental]
                                   [--work DIR] [--pandas-limit-gb 16] [--pandas-timeout 1200]
Prints one JSON line per size and source: rows, source, seconds, driver_rss_mb, pandas_seconds, pandas_failed,
same_summary.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PARTITIONS = 100_000
TOPICS = 100
STEP_MS = 300_000  # five minutes
T0 = 1_795_000_000_000 - 1_795_000_000_000 % 86_400_000  # a UTC midnight
DRIVER_MEMORY = "6g"  # what `kops sizes summarize` takes in local mode on a machine of 18 GiB or more
CHUNK = 48  # samples per generated file (288 a day: chunks never straddle a day)


# -- data -------------------------------------------------------------------------------------------------------

def _chunk(first: int, count: int) -> pa.Table:
    ids = np.tile(np.arange(PARTITIONS, dtype=np.int64), count)
    step = np.repeat(np.arange(first, first + count, dtype=np.int64), PARTITIONS)
    base = (ids % 977) * 1_000_000
    growth = (ids % 13 + 1) * 10_000
    size = base + growth * (step % 50) + (growth * 50) * (step // 50) // 2  # drops at every 50th sample
    topics = pa.DictionaryArray.from_arrays(pa.array(ids // (PARTITIONS // TOPICS), pa.int32()),
                                            pa.array([f"topic-{t:03d}" for t in range(TOPICS)]))
    return pa.table({"ts": T0 + step * STEP_MS, "broker": (ids % 6 + 1).astype(np.int32),
                     "log_dir": pa.nulls(len(ids), pa.string()),
                     "topic": topics, "partition": (ids % (PARTITIONS // TOPICS)).astype(np.int32), "bytes": size,
                     "future": np.zeros(len(ids), dtype=bool)})


def _day(ts_ms: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts_ms / 1000))


def generate(work: Path, samples: int, csv: bool) -> tuple[Path, Path | None, Path]:
    """(store, CSV or None, the last sample held back for the incremental run), made once per size."""
    store, held, csv_path = work / "store", work / "held-back", work / "sizes.csv"
    if (work / "done").exists() and (not csv or csv_path.exists()):
        return store, csv_path if csv else None, held
    shutil.rmtree(work, ignore_errors=True)
    (store / "samples").mkdir(parents=True)
    (store / "kops-sizes-store.json").write_text(json.dumps({"format": "kops-sizes-store/1"}) + "\n")
    writer = None
    for first in range(0, samples, CHUNK):
        table = _chunk(first, min(CHUNK, samples - first))
        last = first + table.num_rows // PARTITIONS == samples
        kept = table.slice(0, table.num_rows - PARTITIONS) if last else table
        folder = store / "samples" / f"day={_day(T0 + first * STEP_MS)}"
        folder.mkdir(exist_ok=True)
        pq.write_table(kept, folder / f"gen-{first:06d}.parquet", compression="zstd")
        if last:
            held.mkdir(parents=True, exist_ok=True)
            pq.write_table(table.slice(table.num_rows - PARTITIONS), held / f"gen-{samples - 1:06d}.parquet")
            (held / "day").write_text(_day(T0 + (samples - 1) * STEP_MS))
        if csv:
            rows = pa.table({"timestamp": table["ts"], "broker": table["broker"],
                             "topic": table["topic"].cast(pa.string()), "partition": table["partition"],
                             "bytes": table["bytes"]})
            writer = writer or pacsv.CSVWriter(csv_path, rows.schema,
                                               write_options=pacsv.WriteOptions(include_header=False))
            writer.write_table(rows)
    if writer:
        writer.close()
    (work / "done").write_text("")
    return store, csv_path if csv else None, held


def merge_held_back(store: Path, held: Path) -> None:
    folder = store / "samples" / f"day={(held / 'day').read_text()}"
    folder.mkdir(exist_ok=True)
    for file in held.glob("*.parquet"):
        shutil.copy(file, folder / file.name)


# -- the measured runs, each in a fresh process --------------------------------------------------------------

def child_spark(mode: str, inputs: str, out: str) -> dict[str, Any]:
    from kops.cli.spark_run import spark_session
    from spark import sizes_job

    with spark_session("local[*]", DRIVER_MEMORY) as spark:  # the session `kops sizes summarize` runs
        started = time.perf_counter()
        if mode == "incremental":
            report = sizes_job.run_incremental(spark, inputs, out, fmt="parquet")
        else:
            report = sizes_job.run(spark, [inputs], out, fmt="parquet")
        seconds = time.perf_counter() - started
        jvm = psutil.Process(spark.sparkContext._gateway.proc.pid)  # launched by PySpark
        hwm = next(int(line.split()[1]) for line in Path(f"/proc/{jvm.pid}/status").read_text().splitlines()
                   if line.startswith("VmHWM"))
    return {"seconds": seconds, "samples": report.samples, "driver_rss_mb": round(hwm / 1024, 1)}


def baseline_frame(source: str, path: str):  # type: ignore[no-untyped-def]  # pandas is the baseline's own
    if source == "csv":
        table = pacsv.read_csv(path,
                               read_options=pacsv.ReadOptions(
                                   column_names=["ts", "broker", "topic", "partition", "bytes"]),
                               convert_options=pacsv.ConvertOptions(
                                   column_types={"topic": pa.dictionary(pa.int32(), pa.string())}))
    else:
        table = pq.read_table(Path(path) / "samples", columns=["ts", "topic", "partition", "bytes"])
    df = table.select(["ts", "topic", "partition", "bytes"]).to_pandas()
    del table
    df = df.groupby(["topic", "partition", "ts"], sort=False, as_index=False, observed=True)["bytes"].max()
    df = df.sort_values(["topic", "partition", "ts"], kind="stable")
    df["rise"] = df.groupby(["topic", "partition"], sort=False, observed=True)["bytes"].diff().clip(lower=0).fillna(0)
    g = df.groupby(["topic", "partition"], sort=True, observed=True)
    out = g.agg(bytes=("bytes", "last"), peak_bytes=("bytes", "max"), samples=("bytes", "size"),
                first_seen=("ts", "min"), last_seen=("ts", "max"), risen=("rise", "sum"),
                first_bytes=("bytes", "first")).reset_index()
    window = (out["last_seen"] - out["first_seen"]) / 1000.0
    out["write_bytes_per_s"] = np.where(window > 0, out["risen"] / window.where(window > 0, 1), 0.0)
    out["growth_bytes_per_s"] = np.where(window > 0, (out["bytes"] - out["first_bytes"]) / window.where(window > 0, 1),
                                         0.0)
    out["topic"] = out["topic"].astype(str)
    return out[["topic", "partition", "bytes", "growth_bytes_per_s", "write_bytes_per_s", "peak_bytes", "samples",
                "last_seen"]]


def child_pandas(source: str, path: str, out: str) -> dict[str, Any]:
    started = time.perf_counter()
    frame = baseline_frame(source, path)
    seconds = time.perf_counter() - started
    frame.to_parquet(out)
    return {"seconds": seconds}


def run_child(args: list[str], limit_gb: float | None = None,
              timeout: float | None = None) -> tuple[dict | None, str | None]:
    """A measured run in a fresh process: (its JSON answer, None) or (None, why it did not finish)."""
    process = subprocess.Popen([sys.executable, __file__, "--child", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    watched, started = psutil.Process(process.pid), time.monotonic()
    peak = 0.0
    while process.poll() is None:
        with contextlib.suppress(psutil.NoSuchProcess):
            peak = max(peak, sum(p.memory_info().rss for p in [watched, *watched.children(recursive=True)]) / 2**30)
        if limit_gb is not None and peak > limit_gb:
            process.kill()
            process.wait()
            return None, f"memory: over {limit_gb:g} GiB"
        if timeout is not None and time.monotonic() - started > timeout:
            process.kill()
            process.wait()
            return None, f"time limit: over {timeout:g} s"
        time.sleep(0.5)
    out, err = process.communicate()
    if process.returncode != 0:
        return None, f"exit {process.returncode}: {(err.strip().splitlines() or ['?'])[-1][:200]}"
    return json.loads(out.strip().splitlines()[-1]), None


# -- comparison and the driver --------------------------------------------------------------------------------

def same_summary(spark_out: Path, pandas_out: Path) -> bool:
    import pandas as pd

    got = pd.read_parquet(spark_out / "partitions").sort_values(["topic", "partition"]).reset_index(drop=True)
    expected = pd.read_parquet(pandas_out).sort_values(["topic", "partition"]).reset_index(drop=True)
    exact = ["bytes", "peak_bytes", "samples", "last_seen"]
    return bool(len(got) == len(expected) and (got[exact].to_numpy() == expected[exact].to_numpy()).all()
                and np.allclose(got["growth_bytes_per_s"], expected["growth_bytes_per_s"], rtol=1e-9)
                and np.allclose(got["write_bytes_per_s"], expected["write_bytes_per_s"], rtol=1e-9))


def measure(rows: int, source: str, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    samples = rows // PARTITIONS
    store, csv, held = generate(work / f"{rows}", samples, csv="csv" in args.sources)
    line: dict[str, Any] = {"rows": rows, "source": source, "nproc": os.cpu_count()}
    out = work / f"{rows}" / f"out-{source}"
    shutil.rmtree(out, ignore_errors=True)
    if source == "incremental":
        whole, why = run_child(["spark", "incremental", str(store), str(out)])  # the week's state (not timed here)
        assert whole is not None, why
        merge_held_back(store, held)
        done, why = run_child(["spark", "incremental", str(store), str(out)])
        assert done is not None, why
        line.update(rows=whole["samples"] + done["samples"], new_rows=done["samples"],
                    initial_seconds=round(whole["seconds"], 1))
        expected_input = ("parquet", str(store))
    else:
        done, why = run_child(["spark", "full", str(csv if source == "csv" else store), str(out)])
        assert done is not None, why
        expected_input = (source, str(csv if source == "csv" else store))
        line.update(rows=done["samples"], dataset_rows=rows)
    line.update(seconds=round(done["seconds"], 1), driver_rss_mb=done["driver_rss_mb"])
    pandas_out = work / f"{rows}" / f"pandas-{source}.parquet"
    answer, failed = run_child(["pandas", *expected_input, str(pandas_out)], args.pandas_limit_gb, args.pandas_timeout)
    line.update(pandas_seconds=None if answer is None else round(answer["seconds"], 1), pandas_failed=failed,
                same_summary=None if answer is None else same_summary(out, pandas_out))
    if source == "incremental":
        shutil.rmtree(work / f"{rows}", ignore_errors=True)  # the held-back sample is in the store now
    return line


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        kind, *rest = sys.argv[2:]
        print(json.dumps(child_spark(*rest) if kind == "spark" else child_pandas(*rest)), flush=True)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="50000000,100000000,200000000")
    parser.add_argument("--sources", default="parquet,csv,incremental")
    parser.add_argument("--work", type=Path, default=Path("/tmp/kops-bench-sizes"))
    parser.add_argument("--pandas-limit-gb", type=float, default=16.0)
    parser.add_argument("--pandas-timeout", type=float, default=1200.0)
    args = parser.parse_args()
    for rows in (int(r) for r in args.rows.split(",")):
        for source in args.sources.split(","):
            print(json.dumps(measure(rows, source, args.work, args)), flush=True)


if __name__ == "__main__":
    main()
