"""`kops rebalance -i INV -l LIMIT --out-dir DIR --apply`: the plans a fleet's rebalance wrote, carried out as
`kops apply DIR` carries a fleet out (serial, failure budget, fleet record, recap; docs/design/fleet.md)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from kops.cli import console
from kops.cli.connection import Connection
from kops.cli.fleet import failed
from kops.cli.fleet_apply import FleetRun, apply_fleet, executing
from kops.errors import ExitCode, UsageError
from kops.fleet import record, results, schedule, selection
from kops.fleet.results import ClusterResult
from kops.model.plan import Plan, Rolling


def default_folder(connection: Connection, inventory: Path | None, limit: str | None, out: Path | None,
                   state_dir: Path) -> Path | None:
    """Several clusters selected without --out-dir: a folder of their own under the state folder, stamped, so
    cron's runs never share one; None for one cluster, or when -o names one cluster's file."""
    if out is not None or inventory is None or connection.given:
        return None
    count = len(selection.select(inventory, limit))
    if count < 2:
        return None
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    folder = state_dir / f"fleet-{re.sub(r'[^A-Za-z0-9_.-]', '_', limit or 'all')}-{stamp}"
    console.info(f"{count} clusters selected: their plans go to {folder}")
    return folder


def check_fleet_options(out_dir: Path | None, apply_now: bool, serial: str | None, max_fail_percentage: float) -> None:
    """--serial and --max-fail-percentage run a fleet; --apply over a fleet needs a folder of its own, so no plan
    of an earlier run is applied again and its record is not mistaken for this run's."""
    if (serial is not None or max_fail_percentage) and not (out_dir is not None and apply_now):
        raise UsageError("--serial and --max-fail-percentage apply a fleet", hint="add --out-dir DIR --apply")
    if out_dir is None or not apply_now or not out_dir.exists():
        return
    earlier = sorted(p.name for p in out_dir.glob(f"*{record.PLAN_SUFFIX}")) + (
        [record.NAME] if (out_dir / record.NAME).exists() else [])
    if earlier:
        raise UsageError(f"--apply writes a fleet afresh, and this folder holds {', '.join(earlier[:3])}"
                         + (" ..." if len(earlier) > 3 else ""), where=str(out_dir),
                         hint="give each run its own folder, e.g. --out-dir rebalance/$(date +%Y%m%dT%H%M)")


def apply_rebalanced(fleet: FleetRun, planned: Sequence[ClusterResult], settings: tuple[int | None, Callable[
        [Plan], Rolling | None]], stall: Callable[[Plan], float]) -> ExitCode:
    """Apply the plans written for the clusters worth rebalancing. A cluster that could not be planned (refused
    while busy, unreachable) counts against the failure budget: over it, nothing is applied. The exit code is
    the fleet apply's when it is not 0, else the planning's (1 when any cluster could not be planned)."""
    planning = failed(planned)
    refused = sum(1 for r in planned if r.status not in results.FINISHED)
    if schedule.budget_exceeded(refused, len(planned), fleet.max_fail_percentage):
        console.warning(f"not applying: {refused} of {len(planned)} cluster(s) could not be planned, more than "
                        f"--max-fail-percentage {fleet.max_fail_percentage:g} allows")
        return planning
    if not any(r.status == results.CHANGED for r in planned):
        console.info("nothing to apply: no cluster is worth rebalancing")
        return planning
    rate, rolling = settings
    code = apply_fleet(fleet, executing(rate, rolling, False), stall, lambda _question: None)  # --apply asked
    return code if code is not ExitCode.OK else planning
