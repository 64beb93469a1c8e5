"""The sample store: raw partition-size samples as Parquet, partitioned by day, that Spark reads fast.

A week of 5-minute samples of 100,000 partitions is about 200 million rows: as JSON documents that is a re-parse
of every document per summary; as columnar Parquet, partitioned by UTC day, Spark reads only the columns and days
it needs (the incremental summary reads only the days after its watermark). Layout:

    STORE/kops-sizes-store.json                      {"format": "kops-sizes-store/1"}
    STORE/samples/day=YYYY-MM-DD/*.parquet           one row per replica per sample

Columns, and nothing else: `ts` (epoch ms), `broker`, `log_dir`, `topic`, `partition`, `bytes`, `future` (a
future replica of an intra-broker move: on disk, so the broker summary counts it; the partition summary does
not). Replicas in a log dir in error are not stored: no summary uses them.

`kops sizes collect --store` appends one file per sample here with pyarrow (no Spark); `kops sizes import`
(Spark) appends kafka-log-dirs documents and CSV exports; `kops sizes summarize STORE` reads it.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

from kops.errors import DocumentError
from kops.zk_layout.codecs.log_dirs import LogDirsReport

FORMAT = "kops-sizes-store/1"
MARKER = "kops-sizes-store.json"
SAMPLES = "samples"
COLUMNS = ("ts", "broker", "log_dir", "topic", "partition", "bytes", "future")


def is_store(path: str | Path) -> bool:
    """A local folder holding a sample store (remote stores are named by the `store:` prefix instead)."""
    return (Path(path) / MARKER).is_file()


def create(store: Path) -> None:
    """Make `store` a sample store (idempotent); refuses a folder that holds something else's marker."""
    marker = store / MARKER
    if marker.exists():
        try:
            found = json.loads(marker.read_text()).get("format")
        except (ValueError, AttributeError):
            found = None
        if found != FORMAT:
            raise DocumentError(f"not a kops sample store (format {found!r})", where=str(marker),
                                hint=f"point --store at an empty folder or one made by kops ({FORMAT})")
        return
    (store / SAMPLES).mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"format": FORMAT}) + "\n")


def day(ts_ms: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts_ms / 1000))


def append_report(store: Path, report: LogDirsReport, ts_ms: int) -> tuple[Path, int]:
    """One DescribeLogDirs sample as one Parquet file of the store; (file, rows). Written under a temporary
    name and renamed, so a reader never sees half a file."""
    import pyarrow as pa  # noqa: PLC0415 - only the store's writers need pyarrow
    import pyarrow.parquet as pq  # noqa: PLC0415 - as above

    create(store)
    columns: dict[str, list] = {name: [] for name in COLUMNS}
    for broker in report.brokers:
        for log_dir in broker.log_dirs:
            if log_dir.error:
                continue
            for r in log_dir.replicas:
                for name, value in zip(COLUMNS, (ts_ms, broker.broker, log_dir.path, r.topic, r.partition, r.size,
                                                 r.is_future), strict=True):
                    columns[name].append(value)
    table = pa.table(columns, schema=schema())
    folder = store / SAMPLES / f"day={day(ts_ms)}"
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"collect-{ts_ms}-{uuid.uuid4().hex[:8]}.parquet"
    partial = folder / f".{final.name}.tmp"
    pq.write_table(table, partial, compression="zstd")
    partial.rename(final)
    return final, table.num_rows


def schema():  # type: ignore[no-untyped-def]  # pyarrow is imported lazily, so its types are not named here
    import pyarrow as pa  # noqa: PLC0415 - as above

    return pa.schema([("ts", pa.int64()), ("broker", pa.int32()), ("log_dir", pa.string()), ("topic", pa.string()),
                      ("partition", pa.int32()), ("bytes", pa.int64()), ("future", pa.bool_())])
