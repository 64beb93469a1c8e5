"""What the fleet commands share on the command line: each cluster's connection, running clusters `--forks` at a
time, the recap (Ansible's PLAY RECAP), and `kops state` over a fleet (docs/design/fleet.md)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from rich.markup import escape

from kops.cli import console
from kops.cli.connection import Address, Connection, from_connect
from kops.cli.options import OutputFormat
from kops.errors import ExitCode, KopsError, UsageError
from kops.fleet import results, selection
from kops.fleet.results import ClusterResult
from kops.model import snapshot_format
from kops.model.desired import DesiredState
from kops.model.snapshot import Snapshot
from kops.units import format_size

T = TypeVar("T")
R = TypeVar("R")


def member_connection(connection: Connection, command_config: Path | None) -> Connection:
    """The command line's connection options with the cluster's own client properties (--command-config wins)."""
    if connection.command_config is not None or command_config is None:
        return connection
    return replace(connection, command_config=command_config)


def refuse_direct(connection: Connection, inventory: Path | None) -> Path:
    """A fleet's clusters come from an inventory, never from -b/-z."""
    if connection.given:
        raise UsageError("a fleet's clusters come from the inventory, not -b/-z", hint="drop -b/-z")
    if inventory is None:
        raise UsageError("a fleet needs an inventory", hint="add -i INVENTORY [-l LIMIT]")
    return inventory


def run_parallel(items: Sequence[T], forks: int, work: Callable[[T], R]) -> list[R]:
    """`work` over `items`, `forks` at a time, results in the items' order."""
    if forks <= 1 or len(items) <= 1:
        return [work(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(forks, len(items)), thread_name_prefix="kops-fleet") as pool:
        return list(pool.map(work, items))


def print_recap(found: Sequence[ClusterResult], output_format: OutputFormat, title: str = "FLEET RECAP") -> None:
    """One line per cluster, as Ansible's PLAY RECAP, then the totals; `--format json`: one object per cluster,
    then `{"total": {...}}`."""
    total = results.totals(found)
    if output_format is OutputFormat.json:
        for result in found:
            console.print_json(result.to_json(), one_line=True)
        console.print_json({"total": total}, one_line=True)
        return
    out = console.out
    out.print(f"[bold]{title}[/] " + "*" * max(0, 60 - len(title)), highlight=False)
    width = max((len(r.cluster) for r in found), default=0)
    for result in found:
        style = {"ok": "green", "changed": "yellow", "stopped": "yellow", "failed": "red"}.get(result.status, "dim")
        done = (f"moves={result.moves} bytes={format_size(result.bytes).strip()} time={result.seconds:.0f}s"
                if result.status != "skipped" else "")
        line = f"[{style}]{result.cluster.ljust(width)}[/] : [{style}]{result.status:<8}[/] {done}"
        if result.execution:
            line += f" execution={result.execution}"
        if result.reason and result.status not in results.FINISHED:
            line += f" [dim]({escape(result.reason)})[/]"
        out.print(line, highlight=False)
    counts = " ".join(f"{name}={total[name]}" for name in results.STATUSES)
    out.print(f"{'total'.ljust(width)} : {counts} moves={total['moves']} "
              f"bytes={format_size(total['bytes']).strip()}", highlight=False)


Work = Callable[[selection.Member, Connection, Address], ClusterResult]


def for_each_member(connection: Connection, inventory: Path | None, limit: str | None, forks: int,
                    work: Work) -> list[ClusterResult]:
    """`work` on every cluster `-i/-l` select, `forks` at a time, each with its own connection and address; an
    error is that cluster's result (one line naming it), never the fleet's."""
    source = refuse_direct(connection, inventory)

    def one(member: selection.Member) -> ClusterResult:
        started = time.monotonic()
        try:
            if member.connect is None:
                raise UsageError(f"host {member.name} has neither bootstrap_servers nor zookeeper",
                                 where=str(source))
            return work(member, member_connection(connection, member.command_config), from_connect(member.connect))
        except KopsError as exc:
            console.error(f"{member.name}: {exc.one_line()}")
            return ClusterResult(member.name, results.status_of(exc.exit_code, False), exc.exit_code,
                                 exc.one_line(), seconds=time.monotonic() - started)

    return run_parallel(selection.select(source, limit), forks, one)


def failed(found: Sequence[ClusterResult]) -> ExitCode:
    """1 when any cluster did not end ok or changed."""
    return ExitCode.ERROR if any(r.status not in results.FINISHED for r in found) else ExitCode.OK


def state_fleet(connection: Connection, inventory: Path | None, limit: str | None, out: tuple[Path, int, OutputFormat],
                read_cluster: Callable[[Connection, Address], Snapshot], write: Callable[[Path, bytes], None]
                ) -> ExitCode:
    """`kops state -i INV -l LIMIT --out-dir DIR`: every selected cluster read (by kops state's own
    `read_cluster`), `forks` at a time, each saved as DIR/CLUSTER.json (what `kops plan --snapshot-dir DIR`
    reads); 1 when any could not be read. `out` is the folder, the forks and the format."""
    out_dir, forks, output_format = out

    def read(member: selection.Member, member_connection: Connection, address: Address) -> ClusterResult:
        started = time.monotonic()
        snap = read_cluster(member_connection, address)
        write(out_dir / f"{member.name}.json", snapshot_format.dumps(snap))
        console.info(f"{member.name}: wrote snapshot of {snap.partition_count} partitions to "
                     f"{out_dir / (member.name + '.json')}")
        return ClusterResult(member.name, results.OK, seconds=time.monotonic() - started)

    found = for_each_member(connection, inventory, limit, forks, read)
    print_recap(found, output_format, "STATE RECAP")
    return failed(found)


def declared_connection(connection: Connection, desired: DesiredState, inventory: Path | None) -> Connection:
    """One cluster planned from an inventory: the connection with its host's `command_config`."""
    if inventory is None:
        return connection
    base = selection.inventory_base(inventory)
    return member_connection(connection, selection.command_config_of(desired.host_vars, base, desired.cluster,
                                                                     str(inventory)))
