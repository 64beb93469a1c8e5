"""`kops plan` over a fleet: every cluster the playbook targets within `-l`, read and planned `--forks` at a time
(live, or offline from `--snapshot-dir`), one plan file per cluster in `--out-dir`, and a recap
(docs/design/fleet.md). Each cluster is planned by kops plan's own one-cluster path, handed in as `plan_one`."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kops.cli import console
from kops.cli.connection import Connection
from kops.cli.fleet import declared_connection, print_recap, refuse_direct, run_parallel
from kops.cli.options import OutputFormat
from kops.cli.state import write_atomically
from kops.declare.loader import load_declarations
from kops.declare.problems import DeclarationError
from kops.errors import ExitCode, KopsError, UsageError
from kops.fleet import results
from kops.fleet.markdown import fleet_table
from kops.fleet.record import PLAN_SUFFIX
from kops.fleet.results import ClusterResult
from kops.model import plan_format
from kops.model.desired import DesiredState
from kops.model.plan import Plan
from kops.planner.markdown import render_markdown

PlanOne = Callable[[DesiredState, str, Connection, Path | None], Plan]


@dataclass(frozen=True)
class FleetPlanning:
    """What a fleet plan was asked for on the command line."""

    connection: Connection
    playbook: Path
    inventory: Path | None
    limit: str | None
    extra_vars: list[str] | None
    out_dir: Path | None
    snapshot_dir: Path | None
    forks: int


@dataclass(frozen=True)
class _Planned:
    result: ClusterResult
    plan: Plan | None = None


def plan_fleet(fleet: FleetPlanning, plan_one: PlanOne, render_text: Callable[..., None], output_format: str,
               detailed: bool) -> ExitCode:
    """Plan every targeted cluster with `plan_one` (kops plan's own path: desired, digest, the cluster's connection
    and snapshot file); the exit code over the fleet: 1 any failed, 2 (detailed) something changes."""
    inventory = refuse_direct(fleet.connection, fleet.inventory)
    declarations = load_declarations(fleet.playbook, inventory, fleet.limit, fleet.extra_vars or [], None)
    for warning in declarations.problems.warnings:
        console.warning(str(warning))
    if declarations.problems.errors:
        raise DeclarationError(declarations.problems.sorted_errors())
    if not declarations.desired:
        raise UsageError("the playbook targets no cluster", where=str(fleet.playbook),
                         hint="check the plays' hosts and --limit")

    def one(desired: DesiredState) -> _Planned:
        started = time.monotonic()
        snapshot_file = fleet.snapshot_dir / f"{desired.cluster}.json" if fleet.snapshot_dir is not None else None
        try:
            found = plan_one(desired, declarations.digest, declared_connection(fleet.connection, desired, inventory),
                             snapshot_file)
            _write(fleet.out_dir, found, output_format)
        except KopsError as exc:
            console.error(f"{desired.cluster}: {exc.one_line()}")
            return _Planned(ClusterResult(desired.cluster, results.FAILED, exc.exit_code, exc.one_line(),
                                          seconds=time.monotonic() - started))
        status = results.CHANGED if found.has_changes else results.OK
        return _Planned(ClusterResult(desired.cluster, status, moves=found.summary.moves, bytes=found.summary.bytes,
                                      seconds=found.summary.estimated_seconds or 0.0), found)

    planned = run_parallel([declarations.desired[name] for name in sorted(declarations.desired)], fleet.forks, one)
    _show(planned, output_format, render_text)
    errors = sum(1 for p in planned if p.plan is None)
    return results.plan_exit((p.plan.has_changes for p in planned if p.plan is not None), errors, detailed)


def _write(out_dir: Path | None, found: Plan, output_format: str) -> None:
    """DIR/CLUSTER.plan.json, and DIR/CLUSTER.md with --format markdown."""
    if out_dir is None:
        return
    write_atomically(out_dir / f"{found.cluster}{PLAN_SUFFIX}", plan_format.dumps(found))
    if output_format == "markdown":
        write_atomically(out_dir / f"{found.cluster}.md", render_markdown(found).encode() + b"\n")


def _show(planned: list[_Planned], output_format: str, render_text: Callable[..., None]) -> None:
    """Each cluster's plan, then the recap; Markdown: the fleet table above the clusters' sections."""
    found = [p.result for p in planned]
    if output_format == "json":
        console.print_json({"clusters": [p.result.to_json() | {"plan": None if p.plan is None else
                                                               plan_format.to_document(p.plan)} for p in planned],
                             "total": results.totals(found)})
        return
    if output_format == "markdown":
        estimates = {p.result.cluster: p.plan.summary.estimated_seconds or 0.0 for p in planned if p.plan is not None}
        sections = [fleet_table(found, estimates)] + [render_markdown(p.plan) for p in planned if p.plan is not None]
        console.out.print("\n".join(sections), markup=False, highlight=False, soft_wrap=True)
        return
    for p in planned:
        if p.plan is not None:
            render_text(p.plan, details=False)
            console.out.print()
    print_recap(found, OutputFormat.text, "PLAN RECAP")
