"""The Spark sizes job in local mode: every input format, malformed input, retention drops, future replicas,
a failed log dir, and what `kops sizes` makes of it."""

from __future__ import annotations

import json
import os
import tempfile
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
                            2: [("/bad", "KafkaStorageException", [("orders-0", 7777, False)])]},
                            timestamp=T0 + 3 * MIN)
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
    # per replica series, the drop does not count: broker 1 rose 100 + 100, broker 2 (behind by 10, then 5) 105 + 100
    assert o0["write_bytes_per_s"] == pytest.approx((105 + 100) / (3 * MIN / 1000))
    assert o0["growth_bytes_per_s"] == pytest.approx((145 - 90) / (3 * MIN / 1000))  # net: retention shrank it
    assert o0["last_seen"] == T0 + 3 * MIN
    assert rows[("orders", 1)]["growth_bytes_per_s"] == rows[("orders", 1)]["write_bytes_per_s"] == 0.0
    assert rows[("clicks", 0)]["last_seen"] == T0 and rows[("clicks", 0)]["bytes"] == 42
    audit = rows[("audit", 0)]
    assert audit["bytes"] == 61000
    assert audit["write_bytes_per_s"] == audit["growth_bytes_per_s"] == pytest.approx(60000 / 600)
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
    assert t0["samples"] == 12 and t0["write_bytes_per_s"] > 0  # drops never count, rises across runs do
    brokers = [sorted(json.loads(line).items()) for folder in (out, whole)
               for f in sorted((folder / "brokers").glob("part-*.json")) for line in f.read_text().splitlines()]
    assert brokers[:len(brokers) // 2] == brokers[len(brokers) // 2:]


def test_collect_writes_the_store_spark_reads(spark, tmp_path: Path) -> None:
    from kops.sizes.store import append_report, is_store
    from kops.zk_layout.codecs.log_dirs import BrokerLogDirs, LogDir, LogDirsReport, ReplicaSize

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
    assert row["write_bytes_per_s"] == pytest.approx(200 / 120)
    assert row["growth_bytes_per_s"] == pytest.approx(150 / 120)


# -- the write rate per replica series ---------------------------------------------------------------------------

W = 100  # bytes/s appended to p-0
DROP = 500_000  # the segment retention deletes


def _base(t: int) -> int:
    return 1_000_000 + W * t


def out_of_phase_replicas() -> dict[int, list[tuple[int, str, int]]]:
    """Per broker, (seconds after T0, log dir, size of p-0) at that broker's own sample times: broker 1 (the
    leader) on the minute, its retention dropping a segment at 10:30; broker 2 (a follower) on the half minute,
    stalled from 3:00 and caught up by 7:30, dropping the segment at 11:45 and removed after 17:30; broker 3 a
    replica rebuilt by a move, sampled at a quarter past, copying from 13:15 and caught up at 15:15."""
    stalled = {210: 180, 270: 180, 330: 180, 390: 300}
    leader = [(t, "/d1", _base(t) - (DROP if t >= 630 else 0)) for t in range(0, 1201, 60)]
    follower = [(t, "/d1", _base(stalled.get(t, t)) - (DROP if t >= 705 else 0)) for t in range(30, 1051, 60)]
    rebuilt = [(t, "/d2", {795: 100_000, 855: 400_000}.get(t, _base(t) - DROP)) for t in range(795, 1216, 60)]
    return {1: leader, 2: follower, 3: rebuilt}


def write_per_broker_documents(folder: Path, until: int | None = None, after: int = -1) -> list[Path]:
    """One kafka-log-dirs document per broker per sample, timed by that broker's own clock (JSON lines, a file per
    broker); only the samples in (after, until]."""
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for broker, samples in out_of_phase_replicas().items():
        docs = [log_dirs_doc({broker: [(d, None, [("p-0", size, False)])]}, timestamp=T0 + t * 1000)
                for t, d, size in samples if after < t <= (until if until is not None else t)]
        if docs:
            files.append(folder / f"broker-{broker}.jsonl")
            files[-1].write_text("".join(json.dumps(doc) + "\n" for doc in docs))
    return files


def test_write_rate_per_replica_series_out_of_phase_lagging_rebuilt_and_dropped(spark, tmp_path: Path) -> None:
    """Brokers sampling at their own times: a series built from the largest replica at each time would count
    every rise from the stalled follower's or the rebuilt replica's smaller size back to the leader's (an
    estimate several times too high). Per replica series: the leader appends W over 20 minutes but its
    retention drop hides one minute (1140/1200 W); the follower loses its drop minute too (960/1020 W); the
    rebuilt replica's copy is not writes, and its series counts from the leader's size when the copy began
    (13:00) to its own last sample: exactly W. The partition's rate is the largest; its net growth is the longest
    series' (the leader's: the retention drop shrank the partition)."""
    folder = tmp_path / "in"
    write_per_broker_documents(folder)
    sizes_job.run(spark, [str(folder)], str(tmp_path / "out"))
    row = summary(tmp_path / "out")[("p", 0)]
    assert row["write_bytes_per_s"] == pytest.approx(W, rel=1e-9)
    assert row["growth_bytes_per_s"] == pytest.approx((W * 1200 - DROP) / 1200, rel=1e-9)
    assert row["samples"] == 21 + 18 + 8 and row["last_seen"] == T0 + 1215 * 1000
    without_rebuilt = tmp_path / "two"
    write_per_broker_documents(without_rebuilt, until=780)  # before the move: the leader's 1140 s of 1200 s lost 60
    sizes_job.run(spark, [str(without_rebuilt)], str(tmp_path / "out2"))
    assert summary(tmp_path / "out2")[("p", 0)]["write_bytes_per_s"] == pytest.approx(W * 720 / 780, rel=1e-9)
    # one collector sampling every broker at once: broker 2's replica, rebuilt at 5:00, copies until 7:00
    fill = {300: 100_000, 360: 500_000}
    csv = tmp_path / "together.csv"
    csv.write_text("".join(f"{T0 + t * 1000},1,q,0,{_base(t)}\n" for t in range(0, 601, 60))
                   + "".join(f"{T0 + t * 1000},2,q,0,{fill.get(t, _base(t))}\n" for t in range(300, 601, 60)))
    sizes_job.run(spark, [str(csv)], str(tmp_path / "out3"))
    assert summary(tmp_path / "out3")[("q", 0)]["write_bytes_per_s"] == pytest.approx(W, rel=1e-9)


def test_incremental_write_rate_equals_the_full_summary_across_a_move(spark, tmp_path: Path) -> None:
    """The state carries each replica series (its last size, its increases, a copy still under way) between
    runs: cut while the rebuilt replica is copying, the merged summary equals the full one."""
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    store = str(tmp_path / "store")
    sizes_job.ensure_store(store)
    out = tmp_path / "incremental"
    for after, until in ((-1, 500), (500, 820), (820, 1300)):
        files = write_per_broker_documents(tmp_path / f"batch{after}", until=until, after=after)
        sizes_job.import_samples(spark, [str(f) for f in files], store)
        sizes_job.run_incremental(spark, store, str(out))
    sizes_job.run(spark, [store], str(tmp_path / "whole"))
    assert summary(out) == summary(tmp_path / "whole")
    assert summary(out)[("p", 0)]["write_bytes_per_s"] == pytest.approx(W, rel=1e-9)


def test_kops_sizes_summarize_and_show(tmp_path: Path, capsys) -> None:
    """Last in the module: the command starts and stops its own Spark session (and with it the module's)."""
    csv = tmp_path / "m.csv"
    csv.write_text("".join(f"{T0 + i * MIN},1,{t},{p},{(p + 1) * 1000 + i * 10}\n"
                           for i in range(5) for t in ("a", "b") for p in range(3)) + "garbage\n")
    out = tmp_path / "sizes"
    assert main(["sizes", "summarize", str(csv), "--out", str(out), "--master", "local[1]"]) == 0
    assert not (Path(tempfile.gettempdir()) / f"kops-spark-{os.getpid()}.log").exists()  # kept only on failure
    err = capsys.readouterr().err
    assert "1 malformed" in err and "stage" not in err  # the progress bar is for terminals: quiet when piped
    assert "Setting default log level" not in err and "incubator" not in err  # Spark's start-up noise stays out
    assert main(["sizes", "show", str(out), "--top", "2", "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [(r["topic"], r["partition"]) for r in shown] == [("a", 2), ("b", 2)]
    assert shown[0]["bytes"] == 3040 and shown[0]["growth_bytes_per_s"] == pytest.approx(40 / 240)
    assert shown[0]["write_bytes_per_s"] == pytest.approx(40 / 240)
    assert main(["sizes", "show", str(out), "--top", "1"]) == 0
    assert "Writes/s" in capsys.readouterr().out
    empty = tmp_path / "e.csv"
    empty.write_text("")
    assert main(["sizes", "summarize", str(empty), "--out", str(tmp_path / "o"), "--master", "local[1]"]) == 1
    assert "no samples" in capsys.readouterr().err
