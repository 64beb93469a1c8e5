"""The sizes reader's write rate: named by the summary, or an older summary's sum of increases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kops.errors import DocumentError
from kops.model.partitions import TopicPartition
from kops.sizes.reader import read_sizes

A0, A1 = TopicPartition("a", 0), TopicPartition("a", 1)


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
