"""`kops rebalance`: a bounded rebalance, made for cron — plan it, and with `--apply --yes` carry it out."""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import os
import re
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from kops.cli import console
from kops.cli.apply import (
    BatchTimeout,
    MaxInFlight,
    MaxMovesPerBroker,
    Poll,
    RollingFlag,
    StallTimeout,
    Yes,
    confirm,
    rolling_of,
    run_execution,
    stall_seconds,
)
from kops.cli.connection import (
    Address,
    Connection,
    connection_options,
    inventory_capacity,
    inventory_goals,
    open_cluster,
    resolve,
)
from kops.cli.execution import load_plan
from kops.cli.fleet import failed, for_each_member, print_recap
from kops.cli.fleet_apply import FleetRun, MaxFailPercentage, Serial
from kops.cli.fleet_rebalance import apply_rebalanced, check_fleet_options, default_folder
from kops.cli.healing import (
    Heal,
    HealAfter,
    HealMaxBrokers,
    Sighting,
    Verdict,
    bookkept,
    heal_of,
    healing_said,
    note_absences,
    offline_verdict,
    unnoted,
    verdict,
)
from kops.cli.options import (
    CapacityFile,
    Format,
    Inventory,
    Limit,
    OutputFormat,
    SnapshotFile,
    parse_option,
    parse_throttle,
)
from kops.cli.plan import render_text
from kops.cli.run_metrics import Run, metrics_option
from kops.cli.state import with_log_dirs, write_atomically
from kops.cli.targets import offline_snapshot
from kops.declare.capacity import declared_capacity
from kops.errors import ExitCode, KopsError, NotReady, UsageError
from kops.executor.executor import Outcome
from kops.fleet.record import PLAN_SUFFIX
from kops.fleet.results import CHANGED, OK, ClusterResult
from kops.fleet.selection import Member
from kops.holder import describe
from kops.metrics import Moves
from kops.model import plan_format
from kops.model.capacity import STRAY_WARNING, CapacityDeclaration
from kops.model.desired import Execution
from kops.model.goals import goal_list
from kops.model.partitions import TopicPartition
from kops.model.plan import Plan
from kops.model.snapshot import Snapshot
from kops.planner.bounded import GOALS as BALANCERS
from kops.planner.bounded import Rebalance, Request
from kops.planner.bounded import rebalance as plan_rebalance
from kops.planner.budget import Limits
from kops.planner.goal_rebalance import GoalRebalance, GoalRequest, rebalance_goals
from kops.planner.headroom import UNKNOWN_LOADS
from kops.planner.heal import HEAL_REASON, Healing, heal, healed_first
from kops.planner.markdown import duration, render_markdown
from kops.planner.planner import Policy
from kops.sizes.reader import Sizes, read_sizes
from kops.units import format_size, parse_duration, parse_size

DEFAULT_THROTTLE = "50MiB/s"
F = TypeVar("F", bound=Callable[..., Any])
_REPORT: ContextVar[dict[str, Any] | None] = ContextVar("rebalance_report", default=None)  # the run's, so far


def _summarized_errors(command: F) -> F:
    """With --format json, a run that fails still ends stdout with one object (`_failed`): a cron job appending
    stdout to a JSON-lines file keeps a line for every run. The one line on stderr and the exit code stay
    main()'s. A run whose summary is out already (a refusal) adds none."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        token = _REPORT.set(None)
        try:
            return command(*args, **kwargs)
        except KopsError as exc:
            run: Run = kwargs["run"]
            if kwargs.get("output_format") is OutputFormat.json and run.outcome is None:
                goal = kwargs.get("goals") or kwargs.get("goal")
                console.print_json(_failed(_REPORT.get() or {"goal": goal}, exc, run), one_line=True)
            raise
        finally:
            _REPORT.reset(token)

    return wrapper  # type: ignore[return-value]  # the same call


def _begun(report: dict[str, Any]) -> dict[str, Any]:
    """The run's summary as it is filled in, for `_summarized_errors` to end with what is known."""
    _REPORT.set(report)
    return report


def _failed(report: dict[str, Any], exc: KopsError, run: Run) -> dict[str, Any]:
    """The summary of a run that ended in an error: what it knew (its goal, the plan it wrote, the absent
    brokers once read), `status` "error" (exit 3's "refused"), the `exit_code` and the `error` line, also its
    `reason`."""
    line = exc.one_line()
    return {"applied": False, "plan": None, "execution": None, **report,
            "status": "refused" if isinstance(exc, NotReady) else "error", "reason": line, "error": line,
            "exit_code": int(exc.exit_code), "duration_seconds": round(time.monotonic() - run.started, 3)}


def _state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "kops" / "rebalance"


def _default_out(cluster_id: str | None, connect: str) -> Path:
    name = cluster_id or hashlib.sha256(connect.encode()).hexdigest()[:12]
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return _state_dir() / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}-{stamp}.json"


@connection_options
@metrics_option("rebalance")
@_summarized_errors
def rebalance(
    connection: Connection,
    run: Run,
    inventory: Inventory = None,
    limit: Limit = None,
    goal: Annotated[str | None, typer.Option("--goal", help="One goal: replicas (the default), leaders or bytes "
                                                            "(needs --sizes) run the cron balancers (the most "
                                                            "balance per byte, then the imbalance threshold); any "
                                                            "other goal of --goals runs as a list of one.",
                                             metavar="<goal>")] = None,
    goals: Annotated[str | None, typer.Option("--goals", help="A prioritized goal list, e.g. disk,network_in,replicas,"
                                                              "leaders: one plan for all, no move worsening a goal "
                                                              "before it. Goals: disk (bytes), network_in, "
                                                              "network_out, replicas, topic_replicas, leaders, "
                                                              "leader_bytes_in, preferred_leaders.")] = None,
    max_leader_moves: Annotated[int | None, typer.Option("--max-leader-moves", help="With --goals: at most this many "
                                                                                    "leadership changes.",
                                                         min=0)] = None,
    sizes: Annotated[Path | None, typer.Option("--sizes", help="Partition sizes (kops sizes summarize output): moves "
                                                               "are sized, smallest first.")] = None,
    max_moves: Annotated[int | None, typer.Option("--max-moves", help="At most this many replica moves (leader changes "
                                                                      "for --goal leaders).", min=1)] = None,
    max_bytes: Annotated[str | None, typer.Option("--max-bytes", help="At most this many bytes copied, e.g. 200GiB "
                                                                      "(needs --sizes).")] = None,
    max_duration: Annotated[str | None, typer.Option("--max-duration", help="At most this long by the plan's estimate "
                                                                            "at the throttle, e.g. 45m (needs "
                                                                            "--sizes).")] = None,
    min_improvement: Annotated[float, typer.Option("--min-improvement", help="Do nothing unless the imbalance falls by "
                                                                             "at least this much (0.05 = 5% of the "
                                                                             "load moves toward "
                                                                             "even).", min=0.0)] = 0.05,
    throttle: Annotated[str, typer.Option("--throttle", help="Replication throttle per broker while "
                                                             "moving.")] = DEFAULT_THROTTLE,
    batch_size: Annotated[int, typer.Option("--batch-size", help="At most this many partitions per batch: a checkpoint "
                                                                 "(where SIGTERM stops) after each.", min=1)] = 10,
    out: Annotated[Path | None, typer.Option("--out", "-o", help=(
        "Where to write the plan (default: $XDG_STATE_HOME/kops/rebalance/CLUSTER-TIME.json)."))] = None,
    apply_now: Annotated[bool, typer.Option("--apply", help="Carry the plan out (lock, checkpoints, record); with "
                                                            "--yes when there is no terminal.")] = False,
    yes: Yes = False,
    output_format: Format = OutputFormat.text,
    batch_timeout: BatchTimeout = None,
    stall_timeout: StallTimeout = None,
    poll: Poll = 0.5,
    rolling: RollingFlag = False,
    max_moves_per_broker: MaxMovesPerBroker = None,
    max_in_flight: MaxInFlight = None,
    heal_after: HealAfter = None,
    heal_max_brokers: HealMaxBrokers = 1,
    capacity: CapacityFile = None,
    snapshot_file: SnapshotFile = None,
    out_dir: Annotated[Path | None, typer.Option(
        "--out-dir", help="Plan a rebalance of every cluster -i/-l select (a fleet), one at a time: "
                          "DIR/CLUSTER.plan.json each, for kops apply DIR (or --apply).")] = None,
    serial: Serial = None,
    max_fail_percentage: MaxFailPercentage = 0.0,
    markdown: Annotated[Path | None, typer.Option("--markdown", help=(
        "Also write the plan as a pull-request comment to this file, as kops plan --format markdown shows a plan "
        "(with a goal list: its goal table and each broker's disk and network-in utilization charts)."))] = None,
) -> None:
    """Rebalance within limits, made for cron: the moves that buy the most balance per byte first, nothing at all
    below the improvement threshold, never while the cluster is busy or unhealthy, never a prompt without a
    terminal. Writes the plan (kops-plan/2, so `kops rollback PLAN` undoes it); with --apply --yes runs it
    through the executor and stops at the next checkpoint on SIGTERM or SIGINT.

    With --heal-after 30m, a broker absent (not registered) that long has its replicas re-created on live
    brokers first, while at most --heal-max-brokers are absent (docs/design/healing.md). With --snapshot FILE it
    plans offline from a kops-snapshot/1 file and reaches no cluster (so it never heals nor applies).

    The imbalance is the share of the load above the live brokers' fair share (0 = even; 0.25 = a quarter
    of the replicas, leaders or bytes would have to move), so --min-improvement 0.05 asks for 5% of it.

    Examples:

    \b
      kops rebalance -b broker1:9092 --max-moves 50 --min-improvement 0.1
      kops rebalance -i inventories/example -l prod-eu --goal bytes \\
          --sizes sizes/prod-eu --max-duration 45m --apply --yes --format json
      kops rebalance -b broker1:9092 --max-moves 200 --apply --yes --rolling \\
          --max-moves-per-broker 2
      kops rebalance -z zk1:2181/kafka --max-moves 50      # ZooKeeper mode
      kops rebalance -z zk1:2181/kafka --heal-after 30m --apply --yes  # heals
      kops rebalance --snapshot snaps/prod-eu.json --max-moves 50 \\
          -o plans/prod-eu.json                  # offline: reaches no cluster
      kops rebalance --snapshot snaps/prod-eu.json --sizes sizes/prod-eu \\
          --goals disk,network_in,replicas,leaders -o plan.json \\
          --markdown plan.md                     # a goal list, for review
      kops rebalance -i inventories/example -l prod --max-moves 50 \\
          --out-dir plans/rebalance              # a fleet: kops apply DIR
      kops rebalance -i inventories/example -l prod --max-moves 50 \\
          --out-dir rebalance/2026-11-26 --apply --yes --serial 1

    Exit codes: 0 done, planned, or nothing worth doing; 1 error (bad arguments, unreachable cluster, --apply
    without --yes and without a terminal); 3 refused (a reassignment in flight, an execution running, the
    cluster unhealthy) or stopped at a checkpoint; 4 the cluster changed between plan and apply; 5 locked.
    """
    rate = parse_throttle(throttle)
    limits = _limits(goal, sizes, max_moves, max_bytes, max_duration)
    healing_options = heal_of(heal_after, heal_max_brokers)
    listed = _goal_list(goals, goal)
    out_dir = out_dir or (None if snapshot_file else default_folder(connection, inventory, limit, out, _state_dir()))
    _check_options(snapshot_file, apply_now, out_dir, healing_options, markdown, (serial, max_fail_percentage))
    if apply_now:
        confirm("apply the rebalance it plans?", yes, output_format)
    known = read_sizes(sizes) if sizes is not None else Sizes()
    planning = _Planning(Request(goal if goal in BALANCERS else "replicas", limits, min_improvement), known, rate,
                         batch_size, max_leader_moves, inherit=goal is None and not listed)
    if listed:
        planning = planning.with_goals(listed)
    pacing = _Pacing(poll, batch_timeout, stall_timeout, rolling, max_moves_per_broker, max_in_flight)
    if out_dir is not None:
        fleet = FleetRun(out_dir, connection, inventory, output_format, False, poll, batch_timeout, serial,
                         max_fail_percentage) if apply_now else None
        raise typer.Exit(_rebalance_fleet(connection, inventory, limit, (out_dir, output_format), planning,
                                          capacity, run, (fleet, pacing)))
    declared = declared_capacity(capacity, inventory_capacity(inventory, limit))
    planning = _bounded_leaders(planning.inherited(inventory, limit), max_leader_moves)
    report = _begun({"goal": planning.goal_name, "applied": False, "plan": None, "execution": None})
    live: dict[TopicPartition, int] | None = {} if sizes is None else None
    snapshot, healing, address, seen = _read(connection, (inventory, limit, snapshot_file), report, run,
                                             output_format, healing_options, live)
    planning = planning.sized_by(live)
    where = address.where if address is not None else snapshot.connect or str(snapshot_file)
    result = planning.plan(snapshot, limit or where, declared, healing)
    said = healing_said(result, snapshot, seen, healing_options, healing) if healing and healing_options else None
    if not result.worthwhile:
        _finish(report | {"status": "noop", "reason": _below(result)}, result, run, output_format, said)
        return
    plan_file = _written(result.plan, out or _default_out(snapshot.cluster_id, where), markdown, output_format)
    report["plan"] = str(plan_file)
    if not apply_now or address is None:
        _finish(report | {"status": "planned", "reason": f"apply with: kops apply {plan_file}"}, result, run,
                output_format, said)
        return
    outcome = _apply(plan_file, connection, address, output_format, rate, pacing, run)
    done = outcome.exit_code is ExitCode.OK
    report |= {"applied": done, "execution": outcome.record.id,
               "status": "applied" if done else "stopped", "reason": outcome.reason}
    _finish(report, result, run, output_format, said)
    if not done:
        raise typer.Exit(outcome.exit_code)


def _check_options(snapshot_file: Path | None, apply_now: bool, out_dir: Path | None, healing: Heal | None,
                   markdown: Path | None, fleet: tuple[str | None, float]) -> None:
    """The options that cannot go together, refused before anything is read."""
    if snapshot_file is not None and (apply_now or out_dir is not None):
        raise UsageError("--snapshot plans one cluster offline", hint="drop --apply and --out-dir; apply the plan it "
                                                                      "writes with kops apply PLAN")
    _one_cluster(out_dir, healing, markdown)
    check_fleet_options(out_dir, apply_now, *fleet)


def _bounded_leaders(planning: _Planning, max_leader_moves: int | None) -> _Planning:
    """--max-leader-moves bounds a goal list's leadership changes; the balancers have --max-moves."""
    if max_leader_moves is not None and not isinstance(planning.request, GoalRequest):
        raise UsageError("--max-leader-moves goes with a goal list", hint="--goals, or the inventory's "
                                                                          "rebalance_goals; --max-moves bounds --goal "
                                                                          "leaders")
    return planning


def _written(plan: Plan, plan_file: Path, markdown: Path | None, output_format: OutputFormat) -> Path:
    """The plan written (and its pull-request comment, with --markdown), then shown as text."""
    write_atomically(plan_file, plan_format.dumps(plan))
    if markdown is not None:
        write_atomically(markdown, render_markdown(plan).encode() + b"\n")
    if output_format is OutputFormat.text:
        render_text(plan, details=False, dirs=True)
        console.info(f"wrote plan to {plan_file}" + (f", its pull-request comment to {markdown}" if markdown else ""))
    return plan_file


@dataclass(frozen=True)
class _Planning:
    """What a rebalance plans with, the same for one cluster and for each of a fleet."""

    request: Request | GoalRequest
    known: Sizes
    rate: int | None
    batch_size: int
    max_leader_moves: int | None = None
    inherit: bool = False  # no --goal or --goals: a cluster's inventory `rebalance_goals` applies

    @property
    def goal_name(self) -> str:
        return ",".join(self.request.goals) if isinstance(self.request, GoalRequest) else self.request.goal

    def with_goals(self, goals: tuple[str, ...]) -> _Planning:
        """The same run for a goal list; a goal without its load is refused, never skipped quietly."""
        _loads_known(goals, self.known)
        limits, threshold = self.request.limits, self.request.min_improvement
        return replace(self, request=GoalRequest(goals, limits, threshold, self.max_leader_moves), inherit=False)

    def sized_by(self, live: dict[TopicPartition, int] | None) -> _Planning:
        """Without --sizes, the sizes the cluster reported (DescribeLogDirs), said as `kops plan` says them: its
        moves then carry their bytes and estimates, and the smallest partitions move first (without them every
        move showed 0 B and no estimate)."""
        if not live:
            return self
        console.info(f"sizes of {len(live)} partitions from the cluster (DescribeLogDirs)")
        return replace(self, known=replace(self.known, bytes=dict(live)))

    def inherited(self, inventory: Path | None, cluster: str | None) -> _Planning:
        """With neither --goal nor --goals, the cluster's `rebalance_goals` where its inventory has one."""
        goals = inventory_goals(inventory, cluster) if self.inherit else ()
        return self.with_goals(goals) if goals else self

    def plan(self, snapshot: Snapshot, cluster: str, declared: CapacityDeclaration | None,
             healing: tuple[int, ...] = ()) -> Rebalance | GoalRebalance:
        """The bounded rebalance, or with `healing` (absent brokers past --heal-after) the healing and then the
        rebalance, within one budget."""
        known = self.known
        policy = Policy(throttle=self.rate, growth=known.growth, remote=known.remote, capacity=declared,
                        write=known.write)  # the plan reports capacity (planner/headroom.py)
        execution = Execution(throttle=self.rate, max_partitions=self.batch_size)
        if isinstance(self.request, GoalRequest):  # --goals: healing first, then the walk with what is left
            healed = healed_first(snapshot, healing, self.request.limits, known.bytes, policy, cluster,
                                  execution) if healing else None
            return rebalance_goals(snapshot, self.request, known.bytes, policy, cluster, execution, healed)
        if healing:
            return heal(snapshot, healing, self.request, known.bytes, policy, cluster, execution)
        return plan_rebalance(snapshot, self.request, known.bytes, policy, cluster=cluster, execution=execution)


def _rebalance_fleet(connection: Connection, inventory: Path | None, limit: str | None,
                     out: tuple[Path, OutputFormat], planning: _Planning, capacity: Path | None, run: Run,
                     then: tuple[FleetRun | None, _Pacing]) -> ExitCode:
    """`--out-dir DIR`: every selected cluster planned, one at a time (each refused while busy, as alone), and
    written as DIR/CLUSTER.plan.json when worth doing; a recap; 1 when any cluster failed or was refused.
    `then` (--apply): the fleet run that carries the plans out (kops/cli/fleet_rebalance.py), and its pacing."""
    out_dir, output_format = out
    fleet, pacing = then

    def one(member: Member, member_connection: Connection, address: Address) -> ClusterResult:
        # without --sizes, each cluster's own (DescribeLogDirs), as alone: a fleet's plans carried no bytes
        live: dict[TopicPartition, int] | None = None if planning.known.bytes else {}
        snapshot = _ready(member_connection, address, {}, run, OutputFormat.text, None, live)[0]
        result = planning.sized_by(live).inherited(inventory, member.name).plan(
            snapshot, member.name, declared_capacity(capacity, inventory_capacity(inventory, member.name)))
        if not result.worthwhile:
            return ClusterResult(member.name, OK, reason=_below(result))
        write_atomically(out_dir / f"{member.name}{PLAN_SUFFIX}", plan_format.dumps(result.plan))
        s = result.plan.summary
        return ClusterResult(member.name, CHANGED, moves=s.moves, bytes=s.bytes, seconds=s.estimated_seconds or 0.0)

    found = for_each_member(connection, inventory, limit, 1, one)
    print_recap(found, output_format, "REBALANCE RECAP")
    if fleet is not None:  # for --metrics-file the exit code says how the fleet ended
        return apply_rebalanced(fleet, found, (planning.rate, lambda plan: rolling_of(
            plan, pacing.rolling, pacing.max_moves_per_broker, pacing.max_in_flight)),
                                lambda plan: stall_seconds(pacing.stall_timeout, plan))
    run.outcome = "planned"  # for --metrics-file: plans written, nothing applied (a failure's exit code says error)
    return failed(found)


def _limits(goal: str | None, sizes: Path | None, max_moves: int | None, max_bytes: str | None,
            max_duration: str | None) -> Limits:
    """The run's budget; bytes and time can only be counted with partition sizes."""
    byte_limit = None if max_bytes is None else parse_option(parse_size, max_bytes, "--max-bytes")
    seconds_limit = None if max_duration is None else parse_option(parse_duration, max_duration, "--max-duration")
    if goal == "bytes" and sizes is None:
        raise UsageError("--goal bytes needs partition sizes", hint="pass --sizes PATH, the output of kops sizes "
                                                                    "summarize")
    for option, value in (("--max-bytes", byte_limit), ("--max-duration", seconds_limit)):
        if value is not None and sizes is None:
            raise UsageError(f"{option} needs partition sizes to count bytes", hint="pass --sizes PATH")
    return Limits(max_moves, byte_limit, seconds_limit)


def _one_cluster(out_dir: Path | None, healing: Heal | None, markdown: Path | None) -> None:
    """What only a run on one cluster does: healing, and the Markdown of its one plan."""
    if out_dir is not None and healing is not None:
        raise UsageError("--heal-after heals one cluster at a time", hint="drop --out-dir, or --heal-after")
    if out_dir is not None and markdown is not None:
        raise UsageError("--markdown writes the plan of one cluster", hint="drop --out-dir, or --markdown")


def _goal_list(goals: str | None, goal: str | None) -> tuple[str, ...]:
    """--goals read through the one goal-list parser, or a --goal other than the balancers' as a list of one
    (empty: a balancer runs), and what they cannot go with."""
    if goals is not None and goal is not None:
        raise UsageError("--goal and --goals together", hint="name the goal in the --goals list")
    if goals is None and (goal is None or goal in BALANCERS):
        return ()
    option, value = ("--goals", goals) if goals is not None else ("--goal", goal)
    assert value is not None
    try:
        return goal_list(value, option)
    except ValueError as exc:
        raise UsageError(str(exc), hint="e.g. --goals disk,network_in,replicas,leaders; --goal replicas, leaders "
                                        "or bytes for the balancers") from exc


def _loads_known(goals: tuple[str, ...], known: Sizes) -> None:
    """A goal named on the command line is never skipped quietly for want of its load."""
    if "disk" in goals and not known.bytes:
        raise UsageError("goal disk needs partition sizes", hint="pass --sizes PATH, the output of kops sizes "
                                                                 "summarize")
    rated = [g for g in goals if g in ("network_in", "network_out", "leader_bytes_in")]
    if rated and not known.write:
        raise UsageError(f"goal {rated[0]} needs write rates", hint="pass --sizes PATH from a kops sizes summarize "
                                                                    "that has write_bytes_per_s")


def _read(connection: Connection, what: tuple[Path | None, str | None, Path | None], report: dict[str, Any], run: Run,
          output_format: OutputFormat, heal_options: Heal | None,
          live: dict[TopicPartition, int] | None = None
          ) -> tuple[Snapshot, tuple[int, ...], Address | None, Sighting]:
    """The cluster read and judged (`_ready`), or with --snapshot FILE the file, judged without reaching any
    cluster: an offline run never heals (it says which brokers are absent) and has no address to apply at.
    `live`, when given, gets the partition sizes the cluster reports (DescribeLogDirs), as `kops plan` reads them."""
    inventory, limit, snapshot_file = what
    if snapshot_file is None:
        address = resolve(connection, inventory, limit)
        snapshot, healing, seen = _ready(connection, address, report, run, output_format, heal_options, live)
        return snapshot, healing, address, seen
    snapshot = offline_snapshot(snapshot_file)
    seen = unnoted(snapshot)
    _judged(offline_verdict(snapshot), seen.summary(), (report, run, output_format), str(snapshot_file))
    return snapshot, (), None, seen


def _ready(connection: Connection, address: Address, report: dict[str, Any], run: Run, output_format: OutputFormat,
           heal_options: Heal | None,
           live: dict[TopicPartition, int] | None = None) -> tuple[Snapshot, tuple[int, ...], Sighting]:
    """The cluster's snapshot, or a refusal (exit 3) while it is busy or unhealthy: cron tries again later. With
    --heal-after the absent brokers are noted in the cluster (the one write before planning,
    docs/design/healing.md §1), and those this run heals; without it nothing is written. kops's own records (the
    lock holder, the notes) unreadable or unwritable because the partition they live in is unhealthy is one more
    reason to refuse, after what is wrong with the cluster, not an error (`bookkept`). `live` as `_read`'s; with
    the absent brokers seen."""
    with open_cluster(connection, address) as cluster:
        if live is not None:
            live.update(cluster.sizes())
        snapshot = with_log_dirs(cluster, cluster.snapshot())  # reported capacity, and dirs for disk_within_broker
        holder, unread = bookkept(snapshot, cluster.holder)
        if heal_options is None or unread is not None:
            seen = unnoted(snapshot, None if unread is None else "kops's records could not be read")
        else:
            seen = note_absences(cluster, snapshot)
    judged = verdict(snapshot, seen, heal_options)
    if holder is not None:
        judged.reasons.insert(0, f"an execution is running ({describe(holder)})")
    if unread is not None:
        judged.reasons.append(f"whether a kops execution is running is not known: {unread}")
    _judged(judged, seen.summary(), (report, run, output_format), address.where)
    return snapshot, judged.healing, seen


def _judged(judged: Verdict, absent: list[dict[str, Any]], said: tuple[dict[str, Any], Run, OutputFormat],
            where: str) -> None:
    """The absent brokers into the summary and the metrics; a refusal (exit 3) when there is a reason not to go
    on: cron tries again later."""
    report, run, output_format = said
    run.brokers_absent = len(absent)
    report["absent"] = absent
    reasons = judged.reasons
    if reasons:
        _finish(report | {"status": "refused", "reason": "; ".join(reasons)}, None, run, output_format)
        raise NotReady(("not healing: " if judged.healing else "not rebalancing: ") + "; ".join(reasons),
                       where=where, hint="nothing was done; the next run tries again")


@dataclass(frozen=True)
class _Pacing:
    """How `--apply` runs the plan: apply's own options, passed through."""

    poll: float
    batch_timeout: float | None
    stall_timeout: float | None
    rolling: bool
    max_moves_per_broker: int | None
    max_in_flight: int | None


def _apply(plan_file: Path, connection: Connection, address: Address, output_format: OutputFormat, rate: int | None,
           pacing: _Pacing, run: Run) -> Outcome:
    """Carry the written plan out through the executor, as `kops apply PLAN` would."""
    written, digest = load_plan(plan_file)  # the file as the executor's record and `kops rollback` will key it
    run.plan(written)
    rolling = rolling_of(written, pacing.rolling, pacing.max_moves_per_broker, pacing.max_in_flight)
    return run_execution(connection, address, output_format, pacing.poll, pacing.batch_timeout,
                         stall_seconds(pacing.stall_timeout, written),
                         lambda executor: executor.apply(written, str(plan_file), digest, False, rate, rolling),
                         check=False, observe=run.tally)


def _below(result: Rebalance | GoalRebalance) -> str:
    if not result.plan.has_changes:
        return f"nothing to move within the limits (imbalance {result.imbalance_before:.3f})"
    return (f"improvement {result.improvement:.3f} (imbalance {result.imbalance_before:.3f} -> "
            f"{result.imbalance_after:.3f}) is below --min-improvement {result.min_improvement:g}")


def _left_as_is(result: Rebalance | GoalRebalance) -> list[str]:
    """What a run that plans nothing must still say about the cluster (a cron job reads exit 0): the brokers
    already over a capacity limit, which no move within the limits relieves, a capacity for a broker the cluster
    does not have, a capacity with nothing to weigh against it. Not the warnings about the plan's moves: it is
    not written."""
    report = result.plan.summary.capacity
    over = list(report.over_before) if report is not None else []
    said = [f"broker(s) {', '.join(map(str, over))} are already over a capacity limit, and no move within the "
            "limits relieves them: add brokers or capacity, or check the declared capacity"] if over else []
    return said + [w for w in result.plan.warnings if w.startswith(STRAY_WARNING) or UNKNOWN_LOADS in w]


def _healed(result: Rebalance | GoalRebalance | None) -> list[int]:
    """The absent brokers whose replicas the run's plan re-homes."""
    if isinstance(result, Healing):
        return list(result.brokers)
    return list(result.healed) if isinstance(result, GoalRebalance) else []


def _finish(report: dict[str, Any], result: Rebalance | GoalRebalance | None, run: Run,
            output_format: OutputFormat, healing: str | None = None) -> None:
    """The run's summary: one JSON object last on stdout for machines, one line for people (after `healing`, the
    line saying what a healing run heals); and its metrics."""
    plan = result.plan if result is not None and result.worthwhile else None
    s = plan.summary if plan is not None else None
    report |= {
        "healed": _healed(result) if plan is not None else [],
        "moves": s.moves if s else 0,
        "leader_moves": s.leader_moves if s else 0,
        "elections": len(plan.election) if plan is not None else 0,
        "bytes": s.bytes if s else 0,
        "estimated_seconds": s.estimated_seconds if s else None,
        "imbalance_before": result.imbalance_before if result else None,
        "imbalance_after": ((result.imbalance_after if plan is not None else result.imbalance_before)
                            if result else None),
        "min_improvement": result.min_improvement if result else None,
        "duration_seconds": round(time.monotonic() - run.started, 3),
    }
    if isinstance(result, GoalRebalance):
        report["goals"] = [asdict(o) for o in result.outcomes]
    if report["status"] == "noop" and result is not None:
        report["warnings"] = _left_as_is(result)
    _measured(run, report, plan)
    if output_format is OutputFormat.json:
        console.print_json(report, one_line=True)  # last line of the stream, after apply's event lines
        return
    if report["status"] == "refused":
        return  # the error line says why
    if healing is not None:
        console.out.print(f"[bold]{healing}[/]")
    if report["status"] == "noop":
        console.out.print(f"[green]nothing to do:[/] {report['reason']}")
        for warning in report.get("warnings", ()):
            console.warning(warning)
        return
    title, shift = _headline(report, result)
    console.out.print(  # a goal list's table is the plan's, printed with it (render_text), not again here
        f"[bold]{title}:[/] {shift}; {report['moves']} replica move(s), {report['leader_moves']} leader-only, "
        f"{format_size(report['bytes'])}, estimated {duration(report['estimated_seconds'])}; "
        + ("[green]applied[/]" if report["applied"] else f"[yellow]{report['status']}[/]: {report['reason'] or ''}"))


def _headline(report: dict[str, Any], result: Rebalance | GoalRebalance | None) -> tuple[str, str]:
    """What the summary line calls the run, and how its imbalance changes. A plan that heals changes the live
    brokers' imbalance by healing too (their new replicas), often upwards: said as healing's, apart from what
    balancing then does, so it never reads as the rebalance making things worse."""
    goal, before, after = report["goal"], report["imbalance_before"], report["imbalance_after"]
    if not report["healed"]:
        return f"rebalance {goal}", f"imbalance {before:.3f} -> {after:.3f}"
    if not isinstance(result, Healing):  # a goal list: its figures are the healed cluster's
        return f"heal, then rebalance {goal}", f"imbalance after healing {before:.3f} -> {after:.3f}"
    healed = result.imbalance_healed if result.imbalance_healed is not None else after
    balancing = sum(1 for m in result.plan.moves if not m.reason.startswith(HEAL_REASON))
    shift = f"imbalance of the live brokers {before:.3f} -> {healed:.3f} from healing's new replicas"
    if balancing:
        return f"heal, then rebalance {goal}", f"{shift}, then -> {after:.3f} by {balancing} balancing move(s)"
    return (f"heal, then rebalance {goal}",
            f"{shift}; no balancing move worth --min-improvement {result.min_improvement:g} within the limits")


def _measured(run: Run, report: dict[str, Any], plan: Plan | None) -> None:
    """The summary's figures for the metrics file: the outcome, the plan's moves (none when nothing is worth
    doing) and the goal's imbalance (unknown when refused before planning)."""
    run.outcome = report["status"]
    run.brokers_healed = len(report["healed"]) if report["status"] == "applied" else 0
    if plan is None:
        run.planned, run.batches = Moves(), ()
    elif not run.batches:  # planned only; an apply counts the plan it loaded
        run.plan(plan)
    if "goals" in report:
        for row in report["goals"]:
            if row["skipped"] is None:
                run.imbalanced(row["name"], row["imbalance_before"], row["imbalance_after"])
    elif report["imbalance_before"] is not None:
        run.imbalanced(report["goal"], report["imbalance_before"], report["imbalance_after"])
