"""`kops status` and `kops cancel` over a fleet: the clusters of a fleet's folder (its plans, and what its record
says of each) or those `-i INV -l LIMIT` select, one row per cluster (docs/design/fleet.md). Exit 1 when any
cluster could not be reached (named, one line each); the others are still shown or asked."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.markup import escape

from kops.cli import console
from kops.cli.connection import Address, Connection, from_connect, open_cluster
from kops.cli.fleet import member_connection, run_parallel
from kops.cli.fleet_apply import fleet_plans, inventory_hosts, reach
from kops.cli.options import OutputFormat
from kops.cluster.port import Cluster
from kops.errors import ExitCode, KopsError, UsageError
from kops.fleet import record, selection

FORKS = 5  # clusters read at once


@dataclass(frozen=True)
class Target:
    """A cluster of the fleet, how to reach it, and its status in the fleet record (a folder's, when there is one)."""

    name: str
    connection: Connection
    address: Address
    in_record: str | None = None


def fleet_targets(connection: Connection, directory: Path | None, inventory: Path | None,
                  limit: str | None) -> list[Target] | None:
    """The fleet's clusters: a folder's plans, or every cluster -i/-l select when that is more than one; None
    for one cluster (the command's own path)."""
    if directory is not None:
        if connection.given:
            raise UsageError("a fleet's clusters come from its plans and the inventory, not -b/-z", hint="drop -b/-z")
        return _folder_targets(connection, directory, inventory)
    if inventory is None or connection.given:
        return None
    members = selection.select(inventory, limit)
    if len(members) < 2:
        return None
    return [_member_target(connection, member, str(inventory)) for member in members]


def _member_target(connection: Connection, member: selection.Member, where: str) -> Target:
    if member.connect is None:
        raise UsageError(f"host {member.name} has neither bootstrap_servers nor zookeeper", where=where)
    return Target(member.name, member_connection(connection, member.command_config), from_connect(member.connect))


def _folder_targets(connection: Connection, directory: Path, inventory: Path | None) -> list[Target]:
    path = directory / record.NAME
    fleet = record.loads(path.read_bytes(), str(path)) if path.exists() else None
    statuses = {e.cluster: e.status for e in fleet.entries} if fleet is not None else {}
    hosts = inventory_hosts(inventory)
    return [Target(plan.cluster, *reach(plan, plan_path, hosts, connection), statuses.get(plan.cluster))
            for plan_path, plan, _digest in fleet_plans(directory)]


def _each(targets: Sequence[Target], work: Callable[[Cluster], dict[str, Any]]) -> list[dict[str, Any]]:
    """`work` on every cluster, FORKS at a time: its answer, or `error` (one line) when it could not be reached."""

    def one(target: Target) -> dict[str, Any]:
        row: dict[str, Any] = {"cluster": target.name, "fleet_status": target.in_record, "error": None}
        try:
            with open_cluster(target.connection, target.address) as cluster:
                return row | work(cluster)
        except KopsError as exc:
            return row | {"error": exc.one_line()}

    return run_parallel(targets, FORKS, one)


def status_fleet(targets: Sequence[Target], collect: Callable[[Cluster], dict[str, Any]],
                 output_format: OutputFormat, watch: tuple[bool, float]) -> ExitCode:
    """One row per cluster (kops status's own `collect` on each), refreshed with --watch until Ctrl-C; 1 when
    any cluster could not be read at the last look. `watch` is --watch and --interval."""
    rows: list[dict[str, Any]] = []

    def show() -> None:
        rows[:] = _each(targets, collect)
        if output_format is OutputFormat.json:
            console.print_json({"clusters": rows})
        else:
            _render(rows)

    repeat(show, output_format, watch)
    return ExitCode.ERROR if any(r["error"] for r in rows) else ExitCode.OK


def repeat(show: Callable[[], None], output_format: OutputFormat, watch: tuple[bool, float]) -> None:
    """`show` once, or with --watch every --interval seconds (the terminal cleared first) until Ctrl-C."""
    watching, interval = watch
    while True:
        if watching and output_format is OutputFormat.text and console.out.is_terminal:
            console.out.clear()
        show()
        if not watching:
            return
        try:
            time.sleep(interval)
        except KeyboardInterrupt:
            return


def _render(rows: Sequence[dict[str, Any]]) -> None:
    table = console.table(f"Fleet: {len(rows)} cluster(s)", "Cluster", "Fleet", "Execution", "Status", ">Batches",
                          ">Batch", ">ETA", ">In flight", ">Throttles", ">Offline")
    for row in rows:
        if row["error"]:
            table.add_row(escape(row["cluster"]), row["fleet_status"] or "", "", "[red]unreachable[/]", *[""] * 6)
            continue
        execution = row["execution"] or {}
        # a held lock runs, unless kops status judges its execution interrupted (the holder's process is gone)
        status = execution.get("status", "")
        running = "running" if row["lock"] and status != "interrupted" else status
        batch = (f"{execution.get('batch_done', 0)}/{execution.get('batch_partitions', 0)}"
                 if execution.get("batch") else "")
        eta = execution.get("batch_eta_seconds")
        table.add_row(escape(row["cluster"]), row["fleet_status"] or "", execution.get("id", ""),
                      running + (" [red](stalled)[/]" if execution.get("stalled_seconds") else ""),
                      f"{execution['batches_done']}/{execution['batches']}" if execution else "", batch,
                      f"{eta:.0f} s" if eta is not None else "", str(len(row["in_flight"])),
                      str(len(row["throttles"])), str(len(row["offline"])))
    console.out.print(table)
    for row in rows:
        if row["error"]:
            console.error(f"{row['cluster']}: {row['error']}")


def cancel_fleet(targets: Sequence[Target], cancel: Callable[[Cluster], str], directory: Path | None) -> ExitCode:
    """kops cancel's own `cancel` on every cluster, each said on one line naming it; with the fleet's folder, a
    marker so the `kops apply DIR` running starts no further cluster. 1 when any could not be asked."""
    if directory is not None:
        (directory / record.CANCEL).write_text(f"kops cancel at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
        console.info(f"asked the fleet of {directory} to start no further cluster")
    rows = _each(targets, lambda cluster: {"said": cancel(cluster)})
    for row in rows:
        if row["error"]:
            console.error(f"{row['cluster']}: {row['error']}")
        else:
            console.info(f"{row['cluster']}: {row['said']}")
    return ExitCode.ERROR if any(r["error"] for r in rows) else ExitCode.OK
