"""Sizes job benchmark: 100,000 partitions × 200 samples = 20 million rows, Spark local mode vs a single process.

Input: CSV exports (`timestamp,broker,topic,partition,bytes`, epoch ms), generated once per size with pyarrow
(100 topics × 1,000 partitions; each partition grows, and every 50th sample retention drops it by half). Measured
per size (5M, 10M, 20M rows): `seconds`, the Spark job (spark/sizes_job.py, local[*]) from reading the CSV to the
partition summary written; `baseline_seconds`, the same summary by pandas/pyarrow in one process (read the CSV,
max over replicas per time, sort, positive increments, aggregate) in the same run. The two summaries are compared
on every partition (bytes, peak, samples exactly; growth to 1e-9).
Target (issue 8): 20M rows in <= 180 s on this machine.

Usage: python bench/spark_sizes.py [--rows 5000000,10000000,20000000]     Prints one JSON line per size.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from spark import sizes_job  # noqa: E402 - after the sys.path line above

PARTITIONS = 100_000
TOPICS = 100
T0 = 1_795_000_000_000


def generate(path: Path, rows: int) -> None:
    samples = rows // PARTITIONS
    ids = np.repeat(np.arange(PARTITIONS, dtype=np.int64), samples)
    step = np.tile(np.arange(samples, dtype=np.int64), PARTITIONS)
    base = (ids % 977) * 1_000_000
    growth = (ids % 13 + 1) * 10_000
    size = base + growth * (step % 50) + (growth * 50) * (step // 50) // 2  # drops at every 50th sample
    table = pa.table({
        "timestamp": T0 + step * 60_000,
        "broker": (ids % 6 + 1).astype(np.int32),
        "topic": pa.array([f"topic-{t:03d}" for t in range(TOPICS)]).take(pa.array(ids // (PARTITIONS // TOPICS))),
        "partition": (ids % (PARTITIONS // TOPICS)).astype(np.int32),
        "bytes": size,
    })
    pacsv.write_csv(table, path, pacsv.WriteOptions(include_header=True))


def baseline(path: Path) -> pd.DataFrame:
    df = pacsv.read_csv(path).to_pandas()
    df = df.groupby(["topic", "partition", "timestamp"], sort=False, as_index=False)["bytes"].max()
    df = df.sort_values(["topic", "partition", "timestamp"], kind="stable")
    rise = df.groupby(["topic", "partition"], sort=False)["bytes"].diff().clip(lower=0).fillna(0)
    df = df.assign(rise=rise)
    g = df.groupby(["topic", "partition"], sort=True)
    out = g.agg(bytes=("bytes", "last"), peak_bytes=("bytes", "max"), samples=("bytes", "size"),
                first_seen=("timestamp", "min"), last_seen=("timestamp", "max"), risen=("rise", "sum")).reset_index()
    window = (out["last_seen"] - out["first_seen"]) / 1000.0
    out["growth_bytes_per_s"] = np.where(window > 0, out["risen"] / window.where(window > 0, 1), 0.0)
    return out[["topic", "partition", "bytes", "growth_bytes_per_s", "peak_bytes", "samples", "last_seen"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="5000000,10000000,20000000")
    args = parser.parse_args()
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[*]").appName("kops-bench").config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "8g").config("spark.sql.shuffle.partitions", "8").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        for rows in (int(r) for r in args.rows.split(",")):
            with tempfile.TemporaryDirectory() as tmp:
                csv = Path(tmp) / "sizes.csv"
                started = time.perf_counter()
                generate(csv, rows)
                generated = time.perf_counter() - started
                started = time.perf_counter()
                report = sizes_job.run(spark, [str(csv)], str(Path(tmp) / "out"), fmt="parquet")
                seconds = time.perf_counter() - started
                started = time.perf_counter()
                expected = baseline(csv)
                baseline_seconds = time.perf_counter() - started
                got = pd.read_parquet(Path(tmp) / "out" / "partitions").sort_values(["topic", "partition"]).reset_index(drop=True)
                same = (len(got) == len(expected)
                        and (got[["bytes", "peak_bytes", "samples", "last_seen"]].to_numpy()
                             == expected[["bytes", "peak_bytes", "samples", "last_seen"]].to_numpy()).all()
                        and np.allclose(got["growth_bytes_per_s"], expected["growth_bytes_per_s"], rtol=1e-9))
                print(json.dumps({"rows": report.samples, "partitions": report.partitions, "seconds": round(seconds, 1),
                                  "baseline_seconds": round(baseline_seconds, 1), "same_summary": bool(same),
                                  "generate_seconds": round(generated, 1), "csv_bytes": csv.stat().st_size,
                                  "nproc": os.cpu_count()}), flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
