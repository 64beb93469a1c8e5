"""Kafka's own kafka-reassign-partitions (ReassignPartitionsCommand from the fetched kafka-tools), run against a
lab's brokers: the outside judge the export and import tests hold kops's files to."""

from __future__ import annotations

from pathlib import Path

from tests.engines import EngineLab
from tests.labtools import wait_until

REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


def reassign_tool(cluster: EngineLab, *args: str) -> str:
    """The tool's output for `args`, against the cluster's brokers."""
    assert cluster.bootstrap is not None
    return cluster.lab.run_tool(cluster.lab.distribution(), REASSIGN, "--bootstrap-server", cluster.bootstrap, *args)


def verify_until_done(cluster: EngineLab, moves: Path, timeout: float = 120.0) -> str:
    """`--verify` until no partition or replica is "still in progress"; the tool then clears its throttles.

    A replica the reassignment brings is in its dir before it has caught up, so the dirs alone do not say the
    controller has finished: only the tool's verdict does."""
    def verified() -> str:
        out = reassign_tool(cluster, "--verify", "--reassignment-json-file", str(moves))
        return "" if "still in progress" in out else out

    return wait_until(verified, timeout=timeout, what=f"kafka-reassign-partitions --verify of {moves.name}")
