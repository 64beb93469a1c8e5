"""Read a sizes summary (`kops sizes summarize --out PATH`) into {partition: bytes}, without starting Spark.

Accepted: the folder `kops sizes summarize --out` wrote (its `partitions/` part), a folder of Spark output files
(`part-*.json` JSON lines, `part-*.parquet` when pyarrow is
installed), a single JSON-lines file, or a JSON object `{"topic-partition": bytes}`. Each row has at least
`topic`, `partition`, `bytes`; `growth_bytes_per_s` (net growth) and `write_bytes_per_s` (the write rate) are
kept when present; a summary written before the write rate was named has only `growth_bytes_per_s`, which then
was the sum of the increases, so it stands for the write rate too. Malformed rows are errors naming the
file and line: sizes drive batching and estimates, so a silently dropped row would mislead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from kops.errors import DocumentError
from kops.formats.base import validate
from kops.formats.sizes import SizesRowDoc
from kops.jsondoc import ShapeError
from kops.model.partitions import TopicPartition


@dataclass
class Sizes:
    bytes: dict[TopicPartition, int] = field(default_factory=dict)
    growth: dict[TopicPartition, float] = field(default_factory=dict)  # net growth, bytes/s (may be negative)
    write: dict[TopicPartition, float] = field(default_factory=dict)  # appended bytes/s (network in per replica)
    remote: dict[TopicPartition, int] = field(default_factory=dict)  # tiered storage: bytes in remote storage
    files: list[str] = field(default_factory=list)
    rows: dict[TopicPartition, dict] = field(default_factory=dict)  # every field of the summary row


def _row(row: object, where: str, sizes: Sizes) -> None:
    try:
        doc = validate(SizesRowDoc, row)
    except ShapeError as exc:
        raise DocumentError(f"bad sizes row: {exc}", where=where,
                            hint="each row needs topic, partition and bytes (docs/sizes-format.md)") from None
    tp = TopicPartition(doc.topic, doc.partition)
    sizes.bytes[tp] = doc.bytes
    sizes.rows[tp] = doc.model_dump(mode="json")
    if doc.growth_bytes_per_s is not None:
        sizes.growth[tp] = doc.growth_bytes_per_s
    write = doc.write_bytes_per_s if doc.write_bytes_per_s is not None else doc.growth_bytes_per_s
    if write is not None:
        sizes.write[tp] = max(write, 0.0)
    if doc.remote_bytes is not None:
        sizes.remote[tp] = doc.remote_bytes


def _json_file(path: Path, sizes: Sizes) -> None:
    text = path.read_text(encoding="utf-8", errors="strict")
    stripped = text.lstrip()
    if stripped.startswith("{") and "\n{" not in stripped.strip():
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DocumentError(f"not JSON: {exc.msg}", where=f"{path}:{exc.lineno}") from None
        if isinstance(doc, dict) and "topic" not in doc:
            for key, value in doc.items():
                name, _, number = key.rpartition("-")
                if not name or not number.isdigit():
                    raise DocumentError(f"key {key!r} is not topic-partition", where=str(path))
                _row({"topic": name, "partition": int(number), "bytes": value}, str(path), sizes)
            return
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            _row(json.loads(line), f"{path}:{number}", sizes)
        except json.JSONDecodeError as exc:
            raise DocumentError(f"not JSON: {exc.msg}", where=f"{path}:{number}") from None


def _parquet_file(path: Path, sizes: Sizes) -> None:
    try:
        import pyarrow.parquet as pq  # optional: Spark's parquet output
    except ImportError:
        raise DocumentError("reading parquet needs pyarrow", where=str(path),
                            hint="pip install pyarrow, or write JSON") from None
    for row in pq.read_table(path, columns=None).to_pylist():
        _row(row, str(path), sizes)


def read_sizes(path: Path) -> Sizes:
    sizes = Sizes()
    if not path.exists():
        raise DocumentError("no such file or folder", where=str(path), hint="write one with kops sizes summarize")
    if (path / "partitions").is_dir():  # `kops sizes summarize --out PATH`: partitions/ and brokers/
        path = path / "partitions"
    files = [path] if path.is_file() else sorted(
        p for p in path.rglob("*")
        if p.is_file() and not p.name.startswith((".", "_")) and p.suffix in (".json", ".parquet", "")
    )
    try:
        for file in files:
            sizes.files.append(str(file))
            if file.suffix == ".parquet":
                _parquet_file(file, sizes)
            else:
                _json_file(file, sizes)
    except UnicodeDecodeError:
        raise DocumentError("not UTF-8 text", where=str(files[len(sizes.files) - 1])) from None
    if not sizes.bytes:
        raise DocumentError("no partition sizes found", where=str(path))
    return sizes
