"""The lab's log dirs per broker (`kops lab up --log-dirs-per-broker N`, docs/design/jbod.md §8): what a real
Kafka node is told, what lab.json keeps, and the kops engine's refusal. Real brokers with two dirs each are
started by tests/integration/test_jbod_real.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kops.cli.main import main
from kops.lab import kafka_config as cfg
from kops.lab.kafka_lab import KafkaLabState

BROKER = cfg.Node(1, (cfg.BROKER,), 9092)
COMBINED = cfg.Node(1, (cfg.BROKER, cfg.CONTROLLER), 9092, controller_port=9093)


def test_one_dir_keeps_the_folder_it_always_had_and_several_are_numbered(tmp_path: Path) -> None:
    assert cfg.log_dirs(tmp_path, 1) == [tmp_path / "data"]
    assert cfg.log_dirs(tmp_path, 3) == [tmp_path / "data-1", tmp_path / "data-2", tmp_path / "data-3"]
    with pytest.raises(ValueError, match="at least one log dir"):
        cfg.log_dirs(tmp_path, 0)


def test_every_dir_is_in_log_dirs_comma_separated_in_both_modes(tmp_path: Path) -> None:
    dirs = cfg.log_dirs(tmp_path, 2)
    expected = f"{tmp_path}/data-1,{tmp_path}/data-2"
    assert cfg.kraft_properties(COMBINED, dirs, [COMBINED], 1)["log.dirs"] == expected
    assert cfg.zookeeper_mode_properties(BROKER, dirs, "127.0.0.1:2181/x", 1)["log.dirs"] == expected
    assert cfg.kraft_properties(COMBINED, dirs[:1], [COMBINED], 1)["log.dirs"] == f"{tmp_path}/data-1"


def test_a_lab_json_written_before_the_option_reads_as_one_dir_per_broker() -> None:
    state = KafkaLabState("kafka-4", "4.3.1", "127.0.0.1:1", None, False, "x")
    doc = json.loads(state.to_json())
    assert doc["log_dirs_per_broker"] == 1
    del doc["log_dirs_per_broker"]
    assert KafkaLabState.from_json(json.dumps(doc)).log_dirs_per_broker == 1
    doc["log_dirs_per_broker"] = 2
    assert KafkaLabState.from_json(json.dumps(doc)).log_dirs_per_broker == 2


@pytest.mark.parametrize(("engine", "count", "said"), [
    ("kops", "2", "the kops engine's brokers have one log dir (JBOD is Kafka's, not the seeds')"),
    ("kafka-4", "0", "--log-dirs-per-broker must be at least 1, not 0"),
])
def test_refused_in_one_line_before_anything_starts(engine: str, count: str, said: str, tmp_path: Path,
                                                    capsys: Any) -> None:
    lab = tmp_path / "lab"
    assert main(["lab", "up", "--engine", engine, "--log-dirs-per-broker", count, "--dir", str(lab)]) == 1
    err = capsys.readouterr().err
    assert said in " ".join(err.split())
    assert not lab.exists()
