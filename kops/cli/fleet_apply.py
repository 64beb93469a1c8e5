"""`kops apply DIR` and `kops rollback DIR`: the plans of a fleet carried out cluster by cluster, `--serial` at a
time, each under its own lock and journal, stopping when the failure budget is spent; the fleet record
DIR/fleet.json names each cluster's execution so `--resume` continues the fleet and rollback undoes it in
reverse (docs/design/fleet.md). Each cluster runs kops apply's own execution, handed in as `action`."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from kops.cli import console
from kops.cli.connection import Address, Connection, from_connect, open_cluster
from kops.cli.execution import Reporter, install_signals, load_plan
from kops.cli.fleet import member_connection, print_recap, run_parallel
from kops.cli.options import OutputFormat
from kops.cli.state import write_atomically
from kops.errors import ExitCode, KopsError, UsageError
from kops.executor.disks import disk_limit
from kops.executor.events import BatchProgressed, Event, RollingProgressed
from kops.executor.executor import Controls, Executor, Outcome
from kops.fleet import progress, record, results, schedule, selection
from kops.fleet.record import Entry, FleetRecord
from kops.fleet.results import ClusterResult
from kops.model.plan import Plan, Rolling
from kops.units import format_size

Action = Callable[[Plan, Path, str, bool], Callable[[Executor], Outcome]]
Serial = Annotated[str | None, typer.Option(
    "--serial", help="A fleet (DIR): clusters run at once, N or N% of the fleet, as Ansible's serial. Default: "
                     "the playbook's serial the plans carry, else all at once.")]
MaxFailPercentage = Annotated[float, typer.Option(
    "--max-fail-percentage", help="A fleet (DIR): start no further cluster once more than this percentage of the "
                                  "fleet failed or stopped (0: the first one).", min=0.0, max=100.0)]


@dataclass(frozen=True)
class FleetRun:
    """What `kops apply DIR` / `kops rollback DIR` was asked for."""

    directory: Path
    connection: Connection
    inventory: Path | None
    output_format: OutputFormat
    resume: bool
    poll: float = 0.5
    batch_timeout: float | None = None
    serial: str | None = None
    max_fail_percentage: float = 0.0
    rate: int | None = None  # rollback's --throttle (apply passes its own to `executing`)


@dataclass(frozen=True)
class _Member:
    """A cluster of the fleet as its plan names it, with how to reach it."""

    entry: Entry
    plan: Plan
    path: Path
    connection: Connection
    address: Address


class ClusterReporter(Reporter):
    """Executor events of one cluster among several: plain lines prefixed with the cluster (no live bars: a
    terminal shows one display at a time), JSON lines with a `cluster` key."""

    def __init__(self, cluster: str, output_format: OutputFormat, observe: Callable[[Event], None] | None = None):
        super().__init__(output_format)
        self.cluster = cluster
        self.live = False
        self.observe = observe

    def __call__(self, event: Event) -> None:
        if self.observe is not None:
            self.observe(event)
        if self.json:
            sys.stdout.write(json.dumps({**event.to_json(), "cluster": self.cluster}, sort_keys=True) + "\n")
            sys.stdout.flush()
            return
        self._render(event)

    def _print(self, text: str, style: str = "") -> None:
        prefix = escape(self.cluster) + ": "
        if style:
            self.screen.print(f"{prefix}[{style}]{text}[/]", highlight=False)
        else:
            self.screen.print(prefix + escape(text), highlight=False)


class _Book:
    """The fleet record, rewritten atomically whenever a cluster starts or ends (clusters run in threads)."""

    def __init__(self, path: Path, fleet: FleetRecord) -> None:
        self.path = path
        self.fleet = fleet
        self._lock = threading.Lock()
        self.save()

    def save(self) -> None:
        write_atomically(self.path, record.dumps(self.fleet))

    def update(self, change: Callable[[FleetRecord], FleetRecord]) -> None:
        with self._lock:
            self.fleet = change(self.fleet)
            self.save()


def fleet_plans(directory: Path) -> list[tuple[Path, Plan, str]]:
    """Every DIR/*.plan.json in name order (the fleet's order), with its digest; none is an error."""
    if not directory.is_dir():
        raise UsageError("not a folder of plans", where=str(directory))
    files = sorted(directory.glob(f"*{record.PLAN_SUFFIX}"))
    if not files:
        raise UsageError(f"no *{record.PLAN_SUFFIX} here", where=str(directory),
                         hint="write them with `kops plan PLAYBOOK -i INV -l LIMIT --out-dir DIR`")
    return [(path, *load_plan(path)) for path in files]


def _members(run: FleetRun, plans: list[tuple[Path, Plan, str]], fleet: FleetRecord) -> list[_Member]:
    """Each plan's cluster with its connection: the inventory host of the plan's cluster name when -i is given
    (its address and command_config), else the plan's own address."""
    hosts = inventory_hosts(run.inventory)
    members = []
    for path, plan, digest in plans:
        entry = fleet.entry(plan.cluster)
        if entry.digest != digest:
            raise UsageError(f"{plan.cluster}: the plan changed since the fleet record was written", where=str(path),
                             hint="make the plans again and apply them afresh (remove fleet.json)")
        members.append(_Member(entry, plan, path, *reach(plan, path, hosts, run.connection)))
    return members


def inventory_hosts(inventory: Path | None) -> dict[str, selection.Member]:
    """Every cluster of the inventory by name (none without one)."""
    return {m.name: m for m in selection.select(inventory, None)} if inventory is not None else {}


def reach(plan: Plan, path: Path, hosts: dict[str, selection.Member], connection: Connection
          ) -> tuple[Connection, Address]:
    """How to reach a plan's cluster: its inventory host's address and command_config when -i names it, else the
    plan's own address."""
    host = hosts.get(plan.cluster)
    connect = (host.connect if host is not None else None) or plan.connect
    if not connect:
        raise UsageError(f"{plan.cluster}: the plan names no address", where=str(path),
                         hint="give -i INVENTORY with the cluster's bootstrap_servers")
    return (member_connection(connection, host.command_config if host is not None else None),
            from_connect(connect))


def _fleet_record(run: FleetRun, plans: list[tuple[Path, Plan, str]]) -> FleetRecord:
    """A new record for a fresh fleet, or the one on disk for --resume."""
    path = run.directory / record.NAME
    if run.resume:
        try:
            return record.loads(path.read_bytes(), str(path))
        except FileNotFoundError:
            raise UsageError("no fleet record to resume", where=str(path), hint="start with `kops apply DIR`") from None
    if path.exists():
        raise UsageError("this fleet was applied before (its record exists)", where=str(path),
                         hint="continue it with --resume, undo it with `kops rollback DIR`, or remove the record")
    names = [plan.cluster for _path, plan, _digest in plans]
    duplicate = sorted({n for n in names if names.count(n) > 1})
    if duplicate:
        raise UsageError(f"several plans for {', '.join(duplicate)}", where=str(run.directory))
    serial = schedule.parse_serial(run.serial or _plans_serial([plan for _p, plan, _d in plans]), len(plans))
    entries = tuple(Entry(plan.cluster, p.name, digest) for p, plan, digest in plans)
    return FleetRecord("apply", serial, schedule.check_percentage(run.max_fail_percentage), entries)


def _plans_serial(plans: list[Plan]) -> str | None:
    """The playbook's `serial`, as the plans carry it: the first plan's that has one (said when others differ)."""
    carried = [plan.serial for plan in plans if plan.serial is not None]
    if len(set(carried)) > 1:
        console.warning(f"the plans carry different serial values ({', '.join(sorted(set(carried)))}): "
                        f"using {carried[0]}, the first plan's (--serial decides)")
    return carried[0] if carried else None


def _run_one(member: _Member, run: FleetRun, controls: Controls, execute: Callable[[Executor], Outcome],
             stall: float, observe: Callable[[Event], None] | None = None) -> ClusterResult:
    """One cluster's execution under its own lock and journal; an error is its result, never the fleet's.
    `observe` sees its events too (the fleet's progress)."""
    started, name, plan = time.monotonic(), member.plan.cluster, member.plan
    reporter = ClusterReporter(name, run.output_format, observe)
    executor: Executor | None = None
    try:
        with open_cluster(member.connection, member.address) as cluster:
            executor = Executor(cluster, reporter, controls, poll_seconds=run.poll, batch_timeout=run.batch_timeout,
                                lock_wait=member.connection.session_timeout + 5, stall_timeout=stall)
            try:
                outcome = execute(executor)
            except KopsError as exc:
                found = executor.journal.latest(member.entry.digest)
                unfinished = found.id if found is not None and not found.finished else None
                return ClusterResult(name, results.status_of(exc.exit_code, True), exc.exit_code, exc.one_line(),
                                     unfinished, seconds=time.monotonic() - started)
    except KopsError as exc:
        return ClusterResult(name, results.status_of(exc.exit_code, True), exc.exit_code, exc.one_line(),
                             seconds=time.monotonic() - started)
    finally:
        reporter.close()
    return ClusterResult(name, results.status_of(outcome.exit_code, True), outcome.exit_code, outcome.reason,
                         outcome.record.id, plan.summary.moves, plan.summary.bytes, time.monotonic() - started)


class Meter:
    """The fleet's progress (kops/fleet/progress.py): fed by every running cluster's events, a `fleet:` line (a
    `fleet_progress` event) every `every` seconds and as each cluster ends: clusters finished, which run, bytes
    copied of all and the fleet's ETA. `batches`: the clusters to run, `serial` at a time."""

    def __init__(self, batches: list[list[str]], planned: dict[str, progress.Planned], output_format: OutputFormat,
                 every: float = 5.0) -> None:
        self.batches, self.planned = batches, planned
        self.seen: dict[str, progress.Seen] = {}
        self.finished: set[str] = set()  # ended, however: no time left on them
        self.copied: set[str] = set()  # ended having applied their plan: all their bytes copied
        self.output_format, self.every = output_format, every
        self._last = time.monotonic()
        self._lock = threading.Lock()

    def observer(self, cluster: str, fleet: Callable[[], FleetRecord]) -> Callable[[Event], None]:
        def observe(event: Event) -> None:
            match event:
                case BatchProgressed():
                    seen = progress.Seen(event.overall_bytes_total, event.overall_bytes_done, event.rate,
                                         event.overall_eta)
                case RollingProgressed():
                    seen = progress.Seen(event.overall_bytes_total, event.overall_bytes_done, event.rate, event.eta)
                case _:
                    return
            with self._lock:
                self.seen[cluster] = seen
                due = time.monotonic() - self._last >= self.every
                if due:
                    self._last = time.monotonic()
            if due:
                self.say(fleet(), None)

        return observe

    def say(self, fleet: FleetRecord, result: ClusterResult | None) -> None:
        """The line: with `result`, that cluster has just ended."""
        with self._lock:
            if result is not None:
                self.finished.add(result.cluster)
                if result.status in results.FINISHED:
                    self.copied.add(result.cluster)
            eta = progress.fleet_eta(self.batches, self.planned, self.seen, self.finished)
            # a cluster that failed or stopped copied what it reported, not its plan (an outside check saw a
            # failed cluster's 46.2 MiB counted as copied)
            done, total = progress.bytes_done(self.planned, self.seen, self.copied)
        finished = sum(1 for e in fleet.entries if e.status in results.FINISHED)
        running = [e.cluster for e in fleet.entries if e.status == results.RUNNING]
        if self.output_format is OutputFormat.json:
            ended = {"cluster": result.cluster, "status": result.status} if result is not None else {}
            console.print_json({"event": "fleet_progress", **ended, "finished": finished,
                                "clusters": len(fleet.entries), "running": running, "bytes_done": done,
                                "bytes_total": total, "eta": None if eta is None else round(eta, 1)}, one_line=True)
            return
        console.out.print("fleet: " + (f"{escape(result.cluster)} {result.status}; " if result else "")
                          + f"{finished}/{len(fleet.entries)} cluster(s) finished"
                          + (f", running: {escape(', '.join(running))}" if running else "")
                          + (f"; {format_size(done).strip()}/{format_size(total).strip()}" if total else "")
                          + (f"; ETA {eta:.0f} s" if eta is not None and running else ""), highlight=False)


def _earlier(entry: Entry, status: str | None = None) -> ClusterResult:
    """A cluster this run leaves alone: what the record says of it."""
    return ClusterResult(entry.cluster, status or entry.status, entry.exit_code, entry.reason, entry.execution)


def executing(rate: int | None, rolling: Callable[[Plan], Rolling | None], allow_incomplete: bool) -> Action:
    """Each cluster's plan through Executor.apply, as `kops apply PLAN` runs one (`rate`: --throttle)."""

    def action(plan: Plan, path: Path, digest: str, resume: bool) -> Callable[[Executor], Outcome]:
        return lambda executor: executor.apply(plan, str(path), digest, resume, rate, rolling(plan), allow_incomplete)

    return action


def apply_fleet(run: FleetRun, action: Action, stall: Callable[[Plan], float],
                confirm: Callable[[str], None]) -> ExitCode:
    """Every plan of the folder, `serial` clusters at a time; no further cluster starts once the failure budget
    is spent or Ctrl-C was pressed (each running cluster stops at its own checkpoint)."""
    plans = fleet_plans(run.directory)
    book_path = run.directory / record.NAME
    fleet = _fleet_record(run, plans)
    members = _members(run, plans, fleet)
    todo = [m for m in members if record.resume_mode(m.entry) is not None]
    confirm(f"{'resume' if run.resume else 'apply'} {len(todo)} plan(s) of the fleet "
            f"({', '.join(m.plan.cluster for m in todo)}), {fleet.serial} cluster(s) at a time?")
    controls = _controls(run.directory)
    book = _Book(book_path, fleet)
    ended: dict[str, ClusterResult] = {}
    batches = schedule.batches(todo, fleet.serial)
    meter = Meter([[m.plan.cluster for m in batch] for batch in batches], {
        m.plan.cluster: progress.Planned(m.plan.summary.bytes, m.plan.summary.estimated_seconds) for m in todo},
        run.output_format)

    def one(member: _Member) -> ClusterResult:
        resume = record.resume_mode(member.entry) == "resume"
        if not resume and not member.plan.has_changes:
            result = ClusterResult(member.plan.cluster, results.OK)
        else:
            book.update(lambda f: f.with_entry(replace(f.entry(member.plan.cluster), status=results.RUNNING)))
            result = _run_one(member, run, controls, action(member.plan, member.path, member.entry.digest, resume),
                              stall(member.plan), meter.observer(member.plan.cluster, lambda: book.fleet))
        book.update(lambda f: f.ended(result))
        meter.say(book.fleet, result)
        return result

    failed = 0
    for batch in batches:
        if _stopping(controls, run.directory) or schedule.budget_exceeded(failed, len(members),
                                                                           fleet.max_fail_percentage):
            break
        for result in run_parallel(batch, len(batch), one):
            ended[result.cluster] = result
            failed += result.status not in results.FINISHED
    waiting = {m.plan.cluster for m in todo}
    found = [ended.get(m.plan.cluster) or _earlier(m.entry, results.SKIPPED if m.plan.cluster in waiting else None)
             for m in members]
    print_recap(found, run.output_format)
    return results.fleet_exit(found)


def rollback_fleet(run: FleetRun, stall: Callable[[Plan], float], confirm: Callable[[str], None]) -> ExitCode:
    """Undo the fleet's executions one cluster at a time, the last started first; the first failure stops it.
    --resume continues clusters whose rollback stopped and skips those rolled back."""
    path = run.directory / record.NAME
    try:
        fleet = record.loads(path.read_bytes(), str(path))
    except FileNotFoundError:
        raise UsageError("no fleet record: nothing of this folder was applied as a fleet", where=str(path)) from None
    members = {m.plan.cluster: m for m in _members(run, fleet_plans(run.directory), fleet)}
    order = [members[e.cluster] for e in record.started(fleet) if e.cluster in members]
    confirm(f"roll back {len(order)} cluster(s) ({', '.join(m.plan.cluster for m in order)}), last first?")
    controls = _controls(run.directory)
    book = _Book(path, fleet)
    found: list[ClusterResult] = []
    for member in order:
        entry = book.fleet.entry(member.plan.cluster)
        if entry.rollback in results.FINISHED or _stopping(controls, run.directory) or any(
                r.status not in results.FINISHED for r in found):
            found.append(_earlier(entry, entry.rollback if entry.rollback in results.FINISHED else results.SKIPPED))
            continue
        resume = run.resume and entry.rollback in (results.STOPPED, results.FAILED)
        result = _run_one(member, run, controls, _undo(member, entry, resume, run.rate), stall(member.plan))
        found.append(result)
        book.update(_rolled_back(result))
    print_recap(found, run.output_format, "ROLLBACK RECAP")
    return results.fleet_exit(found)


def _controls(directory: Path) -> Controls:
    """A fleet run's controls: Ctrl-C or SIGTERM stop every running cluster at its checkpoint; an earlier
    `kops cancel DIR`'s marker is cleared, since this run was asked for after it."""
    (directory / record.CANCEL).unlink(missing_ok=True)
    controls = Controls()
    install_signals(controls)
    return controls


def _stopping(controls: Controls, directory: Path) -> bool:
    """No further cluster starts after Ctrl-C, or once `kops cancel DIR` asked the fleet to stop."""
    if not controls.stop.is_set() and (directory / record.CANCEL).exists():
        console.warning("kops cancel asked the fleet to stop: no further cluster starts")
        controls.stop.set()
    return controls.stop.is_set()


def _undo(member: _Member, entry: Entry, resume: bool, rate: int | None) -> Callable[[Executor], Outcome]:
    """One cluster's rollback: of the execution the fleet record names, or the interrupted rollback (resume)."""
    plan = member.plan
    return lambda executor: executor.rollback(str(member.path), entry.digest, plan.cluster_id,
                                              None if resume else entry.execution, resume, disk_limit(plan), rate)


def _rolled_back(result: ClusterResult) -> Callable[[FleetRecord], FleetRecord]:
    return lambda fleet: fleet.with_entry(replace(fleet.entry(result.cluster), rollback=result.status))
