"""The Spark sizes job in local mode: every input format, malformed input, retention drops, future replicas,
a failed log dir, and what `kops sizes` makes of it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kops.cli.main import main
from kops.model.partitions import TopicPartition
from kops.sizes.reader import read_sizes

pyspark = pytest.importorskip("pyspark")
from spark import sizes_job  # noqa: E402 - after the sys.path line above

MIN = 60_000
T0 = 1_794_960_000_000  # 2026-11-18T00:00:00Z in ms


@pytest.fixture(scope="module")
def spark():
    session = (pyspark.sql.SparkSession.builder.master("local[2]").appName("kops-test")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
               .config("spark.driver.memory", "1g").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def log_dirs_doc(broker_dirs: dict[int, list[tuple[str, str | None, list[tuple[str, int, bool]]]]],
                 timestamp: int | None = None) -> dict:
    doc: dict = {"version": 1, "brokers": [
        {"broker": b, "logDirs": [{"logDir": d, "error": err, "partitions": [
            {"partition": name, "size": size, "offsetLag": 0, "isFuture": future} for name, size, future in parts]}
            for d, err, parts in dirs]}
        for b, dirs in sorted(broker_dirs.items())]}
    if timestamp is not None:
        doc["timestamp"] = timestamp
    return doc


def summary(out: Path) -> dict[tuple[str, int], dict]:
    rows = {}
    for file in sorted((out / "partitions").glob("part-*.json")):
        for line in file.read_text().splitlines():
            row = json.loads(line)
            rows[(row["topic"], row["partition"])] = row
    return rows


def test_every_input_format_with_drops_future_replicas_and_failed_dirs(spark, tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    # 1. the tool's output with its two status lines; time from the file name
    status = "Querying brokers for log directories information\nReceived log directory information from brokers 1,2\n"
    doc = log_dirs_doc({1: [("/d1", None, [("orders-0", 100, False), ("orders-1", 10, False)])],
                        2: [("/d1", None, [("orders-0", 90, False)])]})
    (inputs / "logdirs-20261118T000000Z.json").write_text(status + json.dumps(doc))
    # 2. JSON lines with the collector's timestamps: orders-0 grows, drops by retention, grows again
    lines = [log_dirs_doc({1: [("/d1", None, [("orders-0", size, False), ("orders-1", 10, False)])],
                           2: [("/d1", None, [("orders-0", size - 5, False)])]}, timestamp=ts)
             for ts, size in ((T0 + MIN, 200), (T0 + 2 * MIN, 50), (T0 + 3 * MIN, 150))]
    (inputs / "collected.jsonl").write_text("\n".join(json.dumps(d) for d in lines) + "\n")
    # 3. a future replica (intra-broker move) and a log dir in error, at the latest time: both excluded
    special = log_dirs_doc({1: [("/d1", None, [("orders-0", 150, False)]), ("/d2", None, [("orders-0", 9999, True)])],
                            2: [("/bad", "KafkaStorageException", [("orders-0", 7777, False)])]}, timestamp=T0 + 3 * MIN)
    (inputs / "special.json").write_text(json.dumps(special))
    # 4. no time anywhere: the file's modification time
    plain = inputs / "plain.json"
    plain.write_text(json.dumps(log_dirs_doc({3: [("/d1", None, [("clicks-0", 42, False)])]})))
    os.utime(plain, (T0 / 1000, T0 / 1000))
    # 5. CSV, ISO-8601 and epoch milliseconds, with a header and malformed rows
    (inputs / "metrics.csv").write_text(
        "timestamp,broker,topic,partition,bytes\n"
        "2026-11-18T00:00:00Z,4,audit,0,1000\n"
        f"{T0 + 10 * MIN},4,audit,0,61000\n"
        "yesterday,4,audit,0,5\n"
        f"{T0},4,audit,x,5\n")
    # 6. malformed documents
    (inputs / "broken.json").write_text("{not json")
    (inputs / "wrong.json").write_text(json.dumps({"brokers": [{"logDirs": []}]}))
    out = tmp_path / "out"
    lines_seen: list[str] = []
    report = sizes_job.run(spark, [str(inputs)], str(out), progress=lines_seen.append)
    assert len(lines_seen) == 4 and lines_seen[0].startswith("stage 1/4")
    rows = summary(out)
    o0 = rows[("orders", 0)]
    assert o0["bytes"] == 150 and o0["peak_bytes"] == 200 and o0["samples"] == 4  # max over replicas, no future/error
    assert o0["growth_bytes_per_s"] == pytest.approx((100 + 100) / (3 * MIN / 1000))  # the drop does not count
    assert o0["last_seen"] == T0 + 3 * MIN
    assert rows[("orders", 1)]["growth_bytes_per_s"] == 0.0
    assert rows[("clicks", 0)]["last_seen"] == T0 and rows[("clicks", 0)]["bytes"] == 42
    audit = rows[("audit", 0)]
    assert audit["bytes"] == 61000 and audit["growth_bytes_per_s"] == pytest.approx(60000 / 600)
    assert report.partitions == 4 and report.samples > 0
    malformed = {Path(f).name: n for f, n in report.malformed.items()}
    assert malformed == {"metrics.csv": 2, "broken.json": 1, "wrong.json": 1}
    brokers = [json.loads(line) for f in (out / "brokers").glob("part-*.json") for line in f.read_text().splitlines()]
    by_dir = {(b["broker"], b["log_dir"]): b["bytes"] for b in brokers}
    assert by_dir[(1, "/d1")] == 160 and by_dir[(1, "/d2")] == 9999  # a future replica is on disk
    assert (2, "/bad") not in by_dir  # a failed dir has no size
    # the planner's reader takes the output without Spark
    sizes = read_sizes(out)
    assert sizes.bytes[TopicPartition("orders", 0)] == 150


def test_since_keeps_the_recent_window_and_an_empty_input_says_so(spark, tmp_path: Path) -> None:
    csv = tmp_path / "m.csv"
    csv.write_text("".join(f"{T0 + i * MIN},1,t,0,{i * 100}\n" for i in range(10)))
    report = sizes_job.run(spark, [str(csv)], str(tmp_path / "out"), since="3m")
    assert summary(tmp_path / "out")[("t", 0)]["samples"] == 4
    assert report.samples == 4
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "nothing.json").write_text("Querying brokers\n")
    report = sizes_job.run(spark, [str(empty)], str(tmp_path / "out2"))
    assert report.samples == 0 and len(report.malformed) == 1


def week_of_documents(folder: Path, samples: int, start: int = 0) -> list[Path]:
    """Log-dirs documents every 6 hours across days: 2 brokers, 3 partitions each growing at its own pace, with a
    retention drop every fourth sample; one file per sample."""
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for i in range(start, start + samples):
        sizes = {p: 1000 * (p + 1) + (p + 1) * 100 * (i % 4) - (400 if i % 4 == 0 and i else 0) for p in range(3)}
        doc = log_dirs_doc({1: [("/d1", None, [(f"t-{p}", sizes[p], False) for p in range(3)])],
                            2: [("/d1", None, [(f"t-{p}", sizes[p] - 7, False) for p in range(2)])]},
                           timestamp=T0 + i * 360 * MIN)
        files.append(folder / f"s{i:03d}.json")
        files[-1].write_text(json.dumps(doc))
    return files


def test_incremental_summaries_of_a_store_equal_the_full_summary(spark, tmp_path: Path) -> None:
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    store = str(tmp_path / "store")
    sizes_job.ensure_store(store)
    out = tmp_path / "incremental"
    for start, count in ((0, 5), (5, 5), (10, 2)):  # three cron runs, each importing what arrived since the last
        files = week_of_documents(tmp_path / f"batch{start}", count, start)
        report = sizes_job.import_samples(spark, [str(f) for f in files], store)
        assert report.samples == 5 * len(files) and not report.malformed
        report = sizes_job.run_incremental(spark, store, str(out))
        assert report.samples == 5 * len(files) and report.partitions == 3
    assert sizes_job.run_incremental(spark, store, str(out)).samples == 0  # nothing new: nothing read
    days = sorted(p.name for p in (Path(store) / "samples").iterdir() if p.is_dir())
    assert days == ["day=2026-11-18", "day=2026-11-19", "day=2026-11-20"]  # partitioned by UTC day
    whole = tmp_path / "whole"
    sizes_job.run(spark, [store], str(whole))
    from_documents = tmp_path / "docs"
    sizes_job.run(spark, [str(tmp_path / f"batch{s}") for s in (0, 5, 10)], str(from_documents))
    assert summary(out) == summary(whole) == summary(from_documents)
    t0 = summary(out)[("t", 0)]
    assert t0["samples"] == 12 and t0["growth_bytes_per_s"] > 0  # drops never count, rises across runs do
    brokers = [sorted(json.loads(line).items()) for folder in (out, whole)
               for f in sorted((folder / "brokers").glob("part-*.json")) for line in f.read_text().splitlines()]
    assert brokers[:len(brokers) // 2] == brokers[len(brokers) // 2:]


def test_collect_writes_the_store_spark_reads(spark, tmp_path: Path) -> None:
    from kops.kafka.codecs.log_dirs import BrokerLogDirs, LogDir, LogDirsReport, ReplicaSize
    from kops.sizes.store import append_report, is_store

    store = tmp_path / "store"
    for i, size in enumerate((100, 300, 250)):
        report = LogDirsReport((BrokerLogDirs(1, (LogDir("/d1", None, (ReplicaSize("c", 0, size),)),
                                                  LogDir("/bad", "KafkaStorageException", (ReplicaSize("c", 0, 9),)))),
                                BrokerLogDirs(2, (LogDir("/d1", None, (ReplicaSize("c", 0, size - 1),)),))))
        path, rows = append_report(store, report, T0 + i * MIN)
        assert rows == 2 and path.suffix == ".parquet" and not list(path.parent.glob(".*.tmp"))
    assert is_store(store)
    sizes_job.run(spark, [str(store)], str(tmp_path / "out"))
    row = summary(tmp_path / "out")[("c", 0)]
    assert row["bytes"] == 250 and row["peak_bytes"] == 300 and row["samples"] == 3
    assert row["growth_bytes_per_s"] == pytest.approx(200 / 120)


def test_kops_sizes_summarize_and_show(tmp_path: Path, capsys) -> None:
    csv = tmp_path / "m.csv"
    csv.write_text("".join(f"{T0 + i * MIN},1,{t},{p},{(p + 1) * 1000 + i * 10}\n"
                           for i in range(5) for t in ("a", "b") for p in range(3)) + "garbage\n")
    out = tmp_path / "sizes"
    assert main(["sizes", "summarize", str(csv), "--out", str(out), "--master", "local[1]"]) == 0
    err = capsys.readouterr().err
    assert "1 malformed" in err and "stage" not in err  # the progress bar is for terminals: quiet when piped
    assert "Setting default log level" not in err and "incubator" not in err  # Spark's start-up noise stays out
    assert main(["sizes", "show", str(out), "--top", "2", "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [(r["topic"], r["partition"]) for r in shown] == [("a", 2), ("b", 2)]
    assert shown[0]["bytes"] == 3040 and shown[0]["growth_bytes_per_s"] == pytest.approx(40 / 240)
    empty = tmp_path / "e.csv"
    empty.write_text("")
    assert main(["sizes", "summarize", str(empty), "--out", str(tmp_path / "o"), "--master", "local[1]"]) == 1
    assert "no samples" in capsys.readouterr().err
