"""The sizes summary's rows, read and written through their one declaration (kops/formats/sizes.py): the write
rate named by the summary or an older summary's sum of increases, a bad row as one line naming where it is and
what is wrong, and the Spark job's columns from the same declaration."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

from kops.errors import DocumentError
from kops.formats.sizes import SizesRowDoc, spark_columns
from kops.jsondoc import ShapeError
from kops.model.partitions import TopicPartition
from kops.model.sizes import PartitionSize
from kops.sizes.reader import read_sizes, sizes_text

A0, A1 = TopicPartition("a", 0), TopicPartition("a", 1)
JOB = Path(__file__).resolve().parents[2] / "spark" / "sizes_job.py"


def _lines(path: Path, *rows: dict) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_the_write_rate_and_a_negative_net_growth_are_kept(tmp_path: Path) -> None:
    sizes = read_sizes(_lines(tmp_path / "s.json",
                              {"topic": "a", "partition": 0, "bytes": 10, "growth_bytes_per_s": -3.5,
                               "write_bytes_per_s": 100.0},
                              {"topic": "a", "partition": 1, "bytes": 10}))
    assert sizes.write == {A0: 100.0} and sizes.growth == {A0: -3.5}


def test_an_older_summary_s_growth_stands_for_the_write_rate(tmp_path: Path) -> None:
    """Before write_bytes_per_s, growth_bytes_per_s held the sum of the increases: the write rate."""
    sizes = read_sizes(_lines(tmp_path / "s.json", {"topic": "a", "partition": 0, "bytes": 10,
                                                   "growth_bytes_per_s": 7.0}))
    assert sizes.write == {A0: 7.0} == sizes.growth


def test_a_negative_write_rate_names_the_line(tmp_path: Path) -> None:
    path = _lines(tmp_path / "s.json", {"topic": "a", "partition": 0, "bytes": 10},
                  {"topic": "a", "partition": 1, "bytes": 10, "write_bytes_per_s": -1.0})
    with pytest.raises(DocumentError) as caught:
        read_sizes(path)
    assert caught.value.where == f"{path}:2" and "write_bytes_per_s" in str(caught.value)


# -- bad rows: one line naming the file and line (or Parquet row), what is wrong and what to do ----------------

def _refused(path: Path) -> str:
    with pytest.raises(DocumentError) as caught:
        read_sizes(path)
    line = caught.value.one_line()
    assert "\n" not in line and line.startswith(str(path))
    return line


@pytest.mark.parametrize(("row", "said"), [
    ('{"topic": "a", "partition": 1, "bytes": "big"}', 'bytes must be a JSON integer, got "big"'),
    ('{"topic": "a", "partition": 1}', "bytes is missing"),
    ('{"topic": "a", "partition": -1, "bytes": 10}', "partition is out of range: -1"),
    ('{"topic": "a", "partition": 1, "bytes": 10, "byte": 3}', "byte is not a field of this format"),
    ('{"topic": 7, "partition": 1, "bytes": 10}', "topic must be a JSON string, got 7"),
    ('{"topic": "a", "partition": 1.0, "bytes": 10}', "partition must be a JSON integer, got 1.0"),
    ('{"topic": "a", "partition": 1, "bytes": 10, "samples": true}', "samples must be a JSON integer, got true"),
    ('["a", 1, 10]', "must be a JSON object"),
])
def test_a_bad_row_is_one_line_naming_its_line_the_field_and_what_to_do(tmp_path: Path, row: str, said: str) -> None:
    path = tmp_path / "part-0.json"
    path.write_text('{"topic": "a", "partition": 0, "bytes": 10}\n' + row + "\n")
    line = _refused(path)
    assert line.startswith(f"{path}:2: bad sizes row: ") and said in line, line
    assert "docs/sizes-format.md" in line


def test_a_line_that_is_not_json_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "part-0.json"
    path.write_text('{"topic": "a", "partition": 0, "bytes": 10}\n\n{"topic": "a", "partition": 1, "bytes": 1\n')
    assert _refused(path).startswith(f"{path}:3: not JSON")


def test_a_partition_named_twice_is_refused_at_its_second_row(tmp_path: Path) -> None:
    """A second row for a partition would silently replace the first: the summary is refused instead."""
    (tmp_path / "part-0.json").write_text('{"topic": "a", "partition": 0, "bytes": 10}\n')
    (tmp_path / "part-1.json").write_text('{"topic": "a", "partition": 1, "bytes": 10}\n'
                                          '{"topic": "a", "partition": 0, "bytes": 12}\n')
    with pytest.raises(DocumentError) as caught:
        read_sizes(tmp_path)
    assert caught.value.where == f"{tmp_path / 'part-1.json'}:2" and "a-0 has a row already" in caught.value.what


def test_the_short_form_names_the_bad_key(tmp_path: Path) -> None:
    path = tmp_path / "sizes.json"
    path.write_text('{"a-0": 10, "a-1": -5}')
    line = _refused(path)
    assert line.startswith(f"{path} (key 'a-1'): bad sizes row: bytes is out of range: -5"), line
    path.write_text('{"a-0": 10, "nopartition": 5}')
    assert "key 'nopartition' is not topic-partition" in _refused(path)
    path.write_text('{"a-0": 10, "b-3": 5}')
    assert read_sizes(path).bytes == {A0: 10, TopicPartition("b", 3): 5}


def test_a_bad_parquet_row_names_its_row(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    path = tmp_path / "part-0.parquet"
    pq.write_table(pa.table({"topic": ["a", "a"], "partition": [0, 1], "bytes": [10, -3]}), path)
    line = _refused(path)
    assert line.startswith(f"{path} (row 2): bad sizes row: bytes is out of range: -3"), line


def test_rows_written_from_the_declaration_read_back_as_they_were(tmp_path: Path) -> None:
    rows = [PartitionSize("a", 0, 10, -3.5, 100.0, 12, None, 5, 1_700_000_000_000),
            PartitionSize("a", 1, 0), PartitionSize("b", 0, 2**40, remote_bytes=2**42)]
    text = sizes_text(rows)
    assert text.splitlines()[1] == '{"topic": "a", "partition": 1, "bytes": 0}'  # absent values left out
    sizes = read_sizes(_lines_text(tmp_path / "s.json", text))
    assert list(sizes.rows.values()) == rows
    assert sizes.remote == {TopicPartition("b", 0): 2**42} and sizes.write == {A0: 100.0}


def test_the_writer_refuses_a_row_its_declaration_would_refuse() -> None:
    with pytest.raises(ShapeError, match="partition is out of range"):
        sizes_text([PartitionSize("a", -1, 10)])


def _lines_text(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# -- the Spark job's side of the same declaration ----------------------------------------------------------------

def test_the_spark_columns_are_the_declaration_s_fields_in_order() -> None:
    columns = spark_columns()
    assert [name for name, _, _ in columns] == list(SizesRowDoc.model_fields)
    assert {name for name, _, required in columns if required} == {"topic", "partition", "bytes"}
    assert dict((name, kind) for name, kind, _ in columns) == {
        "topic": "string", "partition": "int", "bytes": "bigint", "growth_bytes_per_s": "double",
        "write_bytes_per_s": "double", "peak_bytes": "bigint", "remote_bytes": "bigint", "samples": "bigint",
        "last_seen": "bigint"}


def test_the_spark_job_s_executors_need_neither_pydantic_nor_the_declaration() -> None:
    """Executors import the job's module (and on other machines get only it and kops.units, kops/cli/spark_run.py):
    its module-level imports are the standard library, PySpark and kops.units; the declaration is read on the
    driver, inside `as_declared`."""
    tree = ast.parse(JOB.read_text())
    imported = {alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in tree.body if isinstance(node, ast.ImportFrom)}
    kops_modules = {name for name in imported if name.split(".")[0] == "kops"}
    others = {name.split(".")[0] for name in imported} - {"kops", "pyspark", "__future__"}
    assert kops_modules == {"kops"} and others <= sys.stdlib_module_names, imported
    inner = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == "as_declared"]
    assert any(isinstance(n, ast.ImportFrom) and n.module == "kops.formats.sizes" for n in ast.walk(inner[0]))


def test_a_file_of_one_row_may_be_pretty_printed_and_an_empty_part_file_holds_none(tmp_path: Path) -> None:
    (tmp_path / "part-0.json").write_text(json.dumps({"topic": "a", "partition": 0, "bytes": 10}, indent=2))
    (tmp_path / "part-1.json").write_text("")
    assert read_sizes(tmp_path).bytes == {A0: 10}


def test_a_file_that_is_not_a_summary_says_what_one_is(tmp_path: Path) -> None:
    (tmp_path / "notes.json").write_text('{"topic": ')
    assert "not JSON" in _refused(tmp_path / "notes.json") and "JSON lines" in _refused(tmp_path / "notes.json")
    (tmp_path / "notes.json").write_bytes(b"\xff\xfe")
    assert "not UTF-8 text" in _refused(tmp_path / "notes.json")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "part-0.json").write_text("")
    assert "no partition sizes found" in _refused(empty) and "kops sizes summarize" in _refused(empty)
