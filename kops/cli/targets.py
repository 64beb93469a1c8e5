"""Resolving what a command acts on: the declarations for one cluster, and that cluster's snapshot."""

from __future__ import annotations

from pathlib import Path

from kops.cli import console
from kops.cli.connection import Address, Connection, from_connect, resolve
from kops.cli.state import take_snapshot
from kops.declare.loader import Declarations, load_declarations
from kops.declare.problems import DeclarationError
from kops.errors import UsageError
from kops.model import snapshot_format
from kops.model.desired import DesiredState
from kops.model.partitions import TopicPartition
from kops.model.snapshot import Snapshot


def one_cluster(playbook: Path, inventory: Path | None, limit: str | None, extra_vars: list[str] | None,
                zookeeper: str | None) -> tuple[Declarations, DesiredState]:
    """Load and validate declarations; exactly one cluster must be targeted (narrow with -l)."""
    declarations = load_declarations(playbook, inventory, limit, extra_vars or [], zookeeper)
    for warning in declarations.problems.warnings:
        console.warning(str(warning))
    if declarations.problems.errors:
        raise DeclarationError(declarations.problems.sorted_errors())
    if not declarations.desired:
        raise UsageError("the playbook targets no cluster", where=str(playbook),
                         hint="check the plays' hosts and --limit")
    if len(declarations.desired) > 1:
        names = ", ".join(declarations.desired)
        raise UsageError(f"the playbook targets {len(declarations.desired)} clusters ({names})",
                         hint="pick one with -l CLUSTER, or plan them all with --out-dir DIR")
    desired = next(iter(declarations.desired.values()))
    if zookeeper and inventory is not None:
        raise UsageError("give either -i/--inventory or -z/--zookeeper, not both")
    return declarations, desired


def cluster_snapshot(desired: DesiredState | None, connection: Connection, snapshot_file: Path | None,
                     sizes: dict[TopicPartition, int] | None = None, quiet: bool = False,
                     address: Address | None = None) -> Snapshot:
    """The snapshot from a file (offline), or read live: `address` where the caller resolved one, -b/-z, else the
    inventory host's address; `sizes`, when given, gets the partition sizes a live read can take (the Admin API's
    DescribeLogDirs)."""
    if snapshot_file is not None:
        return offline_snapshot(snapshot_file)
    return take_snapshot(connection, address or cluster_address(desired, connection), sizes=sizes, quiet=quiet)


def cluster_address(desired: DesiredState | None, connection: Connection) -> Address:
    """Where a live read goes: -b/-z, else the inventory host's address."""
    if connection.given:
        return resolve(connection)
    if desired is None or not desired.connect:
        name = desired.cluster if desired else "the cluster"
        raise UsageError(f"no address for {name}",
                         hint="set its bootstrap_servers (or zookeeper) variable in the inventory, pass -b or -z, "
                              "or plan offline with --snapshot FILE")
    return from_connect(str(desired.connect))


def offline_snapshot(path: Path) -> Snapshot:
    """The kops-snapshot/1 file an offline run plans from (`kops plan --snapshot`, `kops rebalance --snapshot`):
    no cluster is reached, so nothing is written to one either."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read the snapshot: {exc.strerror}", where=str(path),
                         hint="write one with `kops state -z CONNECT --out FILE`") from None
    return snapshot_format.loads(data, str(path))
