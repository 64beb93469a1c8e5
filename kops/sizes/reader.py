"""Read a sizes summary (`kops sizes summarize --out PATH`) into {partition: bytes}, without starting Spark.

Accepted: the folder `kops sizes summarize --out` wrote (its `partitions/` part), a folder of Spark output files
(`part-*.json` JSON lines, `part-*.parquet` when pyarrow is installed), a single JSON-lines file, or a JSON
object `{"topic-partition": bytes}`. Every row is read through its one declaration (kops/formats/sizes.py) into
a `PartitionSize`; a summary written before the write rate was named has only `growth_bytes_per_s`, which then
was the sum of the increases, so it stands for the write rate too (`PartitionSize.write_rate`). A malformed row,
or a partition named twice, is an error naming the file and line (or Parquet row): sizes drive batching and
estimates, so a silently dropped or overwritten row would mislead.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kops.errors import DocumentError
from kops.formats.base import validate
from kops.formats.binding import document_of, value_of
from kops.formats.sizes import SizesRowDoc
from kops.jsondoc import ShapeError
from kops.model.partitions import TopicPartition
from kops.model.sizes import PartitionSize

ROW_HINT = "a row holds topic, partition and bytes, and optional rates (docs/sizes-format.md): fix or remove it"


@dataclass
class Sizes:
    """The summary's rows, and the maps the planner takes from them."""

    bytes: dict[TopicPartition, int] = field(default_factory=dict)
    growth: dict[TopicPartition, float] = field(default_factory=dict)  # net growth, bytes/s (may be negative)
    write: dict[TopicPartition, float] = field(default_factory=dict)  # appended bytes/s (network in per replica)
    remote: dict[TopicPartition, int] = field(default_factory=dict)  # tiered storage: bytes in remote storage
    files: list[str] = field(default_factory=list)
    rows: dict[TopicPartition, PartitionSize] = field(default_factory=dict)

    def add(self, row: PartitionSize, where: str) -> None:
        tp = row.tp
        if tp in self.rows:
            raise DocumentError(f"bad sizes row: partition {tp} has a row already", where=where,
                                hint="a summary holds one row per partition: remove one of them")
        self.rows[tp], self.bytes[tp] = row, row.bytes
        if row.growth_bytes_per_s is not None:
            self.growth[tp] = row.growth_bytes_per_s
        write = row.write_rate
        if write is not None:
            self.write[tp] = write
        if row.remote_bytes is not None:
            self.remote[tp] = row.remote_bytes


def _row(row: object, where: str, sizes: Sizes) -> None:
    try:
        doc = validate(SizesRowDoc, row)
    except ShapeError as exc:
        raise DocumentError(f"bad sizes row: {exc}", where=where, hint=ROW_HINT) from None
    sizes.add(value_of(doc), where)


def _map_file(doc: dict[str, object], path: Path, sizes: Sizes) -> None:
    """The short form `{"topic-partition": bytes}`: each entry read as the row it stands for."""
    for key, value in doc.items():
        name, _, number = key.rpartition("-")
        if not name or not number.isdigit():
            raise DocumentError(f"key {key!r} is not topic-partition", where=str(path),
                                hint='the short form is {"topic-partition": bytes}')
        _row({"topic": name, "partition": int(number), "bytes": value}, f"{path} (key {key!r})", sizes)


def _json_file(path: Path, sizes: Sizes) -> None:
    text = path.read_text(encoding="utf-8", errors="strict")
    if not text.strip():  # Spark may leave an empty part file
        return
    try:
        doc = json.loads(text)  # one document: the short form, or a file of one row
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data" and "\n{" not in text.strip():  # not JSON lines either: say where it breaks
            raise DocumentError(f"not JSON: {exc.msg}", where=f"{path}:{exc.lineno}",
                                hint="a summary is JSON lines, or one JSON object of topic-partition: bytes") from None
        doc = None
    if isinstance(doc, dict):
        if "topic" in doc:
            _row(doc, f"{path}:1", sizes)
        else:
            _map_file(doc, path, sizes)
        return
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DocumentError(f"not JSON: {exc.msg}", where=f"{path}:{number}",
                                hint="a summary holds one JSON object per line") from None
        _row(row, f"{path}:{number}", sizes)


def _parquet_file(path: Path, sizes: Sizes) -> None:
    try:
        import pyarrow.parquet as pq  # optional: Spark's parquet output
    except ImportError:
        raise DocumentError("reading parquet needs pyarrow", where=str(path),
                            hint="pip install pyarrow, or write JSON") from None
    for number, row in enumerate(pq.read_table(path, columns=None).to_pylist(), 1):
        _row(row, f"{path} (row {number})", sizes)


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
        raise DocumentError("not UTF-8 text", where=str(files[len(sizes.files) - 1]),
                            hint="a summary is JSON (UTF-8) or Parquet: is this file part of one?") from None
    if not sizes.bytes:
        raise DocumentError("no partition sizes found", where=str(path),
                            hint="name the folder kops sizes summarize --out wrote, or a file of its rows")
    return sizes


def sizes_text(rows: Iterable[PartitionSize]) -> str:
    """Rows as the JSON lines a summary holds (absent rates left out, as Spark leaves out nulls), each checked
    against the declaration it is written from."""
    lines = []
    for row in rows:
        doc = document_of(row, SizesRowDoc)
        validate(SizesRowDoc, doc)
        lines.append(json.dumps(doc) + "\n")
    return "".join(lines)
