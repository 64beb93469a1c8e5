"""`kops apply` and `kops rollback`: run an execution against the cluster, with progress and checkpoints."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from kops.cli import console
from kops.cli.connection import Address, Connection, connection_options, open_cluster, resolve
from kops.cli.execution import Reporter, install_signals, load_plan
from kops.cli.fleet_apply import FleetRun, MaxFailPercentage, Serial, apply_fleet, executing, rollback_fleet
from kops.cli.options import Format, Inventory, Limit, OutputFormat, Throttle, parse_throttle
from kops.cli.plan import render_text
from kops.cli.run_metrics import Run, metrics_option
from kops.cli.state import AllowIncomplete, refuse_incomplete
from kops.errors import ExitCode, UsageError
from kops.executor.disks import disk_limit
from kops.executor.events import Event
from kops.executor.executor import Controls, Executor, Outcome, Stale
from kops.executor.stall import DEFAULT_STALL_SECONDS
from kops.model.plan import Plan, Rolling
from kops.planner.fingerprint import drift

PlanArg = Annotated[Path, typer.Argument(help="The plan file (kops plan -o FILE), or a fleet's folder of plans "
                                              "(kops plan --out-dir DIR).", show_default=False)]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation (required without a terminal).")]
BatchTimeout = Annotated[float | None, typer.Option(
    "--batch-timeout", help="Stop (exit 3) when a batch runs longer than this many seconds. "
                            "Default: 4 × the batch's estimate at the execution's rate + 10 minutes.", min=1.0)]
Poll = Annotated[float, typer.Option("--poll", help="Seconds between progress reads.", min=0.05)]
AcceptEdited = Annotated[bool, typer.Option(
    "--accept-edited-plan", help="Run a plan file that was changed after kops wrote it (refused otherwise, naming "
                                 "what changed); the execution record notes the edited sections.")]
RollingFlag = Annotated[bool, typer.Option(
    "--rolling", help="Submit moves as others finish instead of in batches: at most --max-moves-per-broker in "
                      "flight touching any broker, --max-in-flight in all (where the cluster accepts moves while "
                      "others "
                      "run: the Admin API, or the KIP-236 queue through ZooKeeper; elsewhere batches, said so). "
                      "Default: the plan's execution.mode.")]
MaxMovesPerBroker = Annotated[int | None, typer.Option(
    "--max-moves-per-broker", help="Rolling: moves in flight touching any one broker (default: the plan's, else 5).",
    min=1)]
MaxInFlight = Annotated[int | None, typer.Option(
    "--max-in-flight", help="Rolling: moves in flight in all (default: the plan's execution.max_moves, else no cap "
                            "beyond the brokers').", min=1)]
StallTimeout = Annotated[float | None, typer.Option(
    "--stall-timeout", help="Stop (exit 3) when a batch shows no progress (no move done, no bytes copied, no ISR "
                            "or assignment change) for this many seconds, naming what each stuck partition "
                            "waits for. Default: the playbook's execution.stall_timeout, else 300.", min=1.0)]


def confirm(question: str, yes: bool, output_format: OutputFormat) -> None:
    if yes:
        return
    if not sys.stdin.isatty() or output_format is OutputFormat.json:
        raise UsageError("confirmation needed and there is no terminal to ask", hint="pass --yes")
    if not typer.confirm(question, default=False):
        console.info("nothing done")
        raise typer.Exit(ExitCode.ERROR)


@connection_options
@metrics_option("apply")
def apply(
    plan_file: PlanArg,
    connection: Connection,
    run: Run,
    inventory: Inventory = None,
    limit: Limit = None,
    yes: Yes = False,
    resume: Annotated[bool,
                      typer.Option("--resume",
                                   help="Continue the interrupted execution of this plan from its record.")] = False,
    throttle: Throttle = None,
    dry_run: Annotated[bool,
                       typer.Option("--dry-run",
                                    help="Check the plan against the cluster and show the steps; write "
                                         "nothing.")] = False,
    output_format: Format = OutputFormat.text,
    batch_timeout: BatchTimeout = None,
    stall_timeout: StallTimeout = None,
    poll: Poll = 0.5,
    accept_edited_plan: AcceptEdited = False,
    rolling: RollingFlag = False,
    max_moves_per_broker: MaxMovesPerBroker = None,
    max_in_flight: MaxInFlight = None,
    allow_incomplete: AllowIncomplete = False,
    serial: Serial = None,
    max_fail_percentage: MaxFailPercentage = 0.0,
) -> None:
    """Execute a plan: non-move changes first, then the batches of moves, each with its throttles, a checkpoint
    at every batch boundary and the throttles restored after it; then the preferred-leader election. A folder of
    plans (kops plan --out-dir DIR) is a fleet: cluster by cluster, --serial at a time (docs/fleet.md).

    Rolling (--rolling, or the playbook's `execution.mode: rolling`): moves are submitted as others finish,
    largest and busiest first, within the per-broker and total caps; the throttles cover exactly the moves in
    flight; Ctrl-C once submits nothing more and stops when those in flight finish, twice cancels them.

    Takes the cluster lock and records the execution (through ZooKeeper: /kops/lock and /kops/executions/<id>;
    through the Admin API: a lease and records in the __kops topic; and a copy beside the plan). Ctrl-C once:
    stop after the batch in flight; twice: cancel it (KIP-455 through the Admin API, KIP-236 where a ZooKeeper
    cluster offers it).

    Examples:

    \b
      kops apply plans/staging.json -b broker1:9092
      kops apply plans/staging.json -b broker1:9092 \\
          --command-config client.properties
      kops apply plans/staging.json -z zk1:2181/kafka
      kops apply plans/staging.json -i inventories/example -l staging --yes \\
          --format json
      kops apply --resume plans/staging.json -b broker1:9092 --yes
      kops apply plans/decommission.json -b broker1:9092 --rolling \\
          --max-moves-per-broker 3

    Exit codes: 0 done, 1 error or refused, 3 stopped at a checkpoint, or not started: the snapshot is incomplete
    (cluster metadata still propagating; --allow-incomplete goes on), 4 the cluster drifted from the plan,
    5 another execution holds the lock.
    """
    if plan_file.is_dir():
        fleet = FleetRun(plan_file, connection, inventory, output_format, resume, poll, batch_timeout, serial,
                         max_fail_percentage)
        _apply_fleet(fleet, yes, lambda plan: rolling_of(plan, rolling, max_moves_per_broker, max_in_flight),
                     (parse_throttle(throttle), allow_incomplete), lambda plan: stall_seconds(stall_timeout, plan))
    plan, digest = load_plan(plan_file, accept_edited_plan)
    run.cluster = run.cluster or plan.cluster
    run.plan(plan)
    address = resolve(connection, inventory, limit, plan.connect)
    rate = parse_throttle(throttle)
    if dry_run:
        run.outcome = "planned"
        _dry_run(connection, address, plan, resume, output_format, allow_incomplete)
        return
    if output_format is OutputFormat.text and not resume:
        render_text(plan, details=False)
    if not resume and not plan.has_changes:
        run.outcome = "noop"
        console.info("the plan changes nothing")
        return
    confirm("resume this execution?" if resume else "apply this plan?", yes, output_format)

    def execute(executor: Executor) -> Outcome:
        return executor.apply(plan, str(plan_file), digest, resume, rate,
                              rolling_of(plan, rolling, max_moves_per_broker, max_in_flight), allow_incomplete)

    run_execution(connection, address, output_format, poll, batch_timeout, stall_seconds(stall_timeout, plan), execute,
                  observe=run.tally)


def _apply_fleet(fleet: FleetRun, yes: bool, rolling: Callable[[Plan], Rolling | None],
                 settings: tuple[int | None, bool], stall: Callable[[Plan], float]) -> None:
    """`kops apply DIR`: each cluster's plan through Executor.apply as one plan would run; `settings` are the
    throttle and --allow-incomplete."""
    rate, allow_incomplete = settings
    raise typer.Exit(apply_fleet(fleet, executing(rate, rolling, allow_incomplete), stall,
                                 lambda question: confirm(question, yes, fleet.output_format)))


def rolling_of(plan: Plan, rolling: bool, per_broker: int | None, total: int | None) -> Rolling | None:
    """The rolling caps from the command line over the plan's; None for batches."""
    if not rolling and plan.rolling is None:
        if per_broker is not None or total is not None:
            raise UsageError("--max-moves-per-broker and --max-in-flight apply to rolling execution only",
                             hint="add --rolling")
        return None
    base = plan.rolling or Rolling()
    return Rolling(per_broker or base.max_moves_per_broker, total if total is not None else base.max_moves)


def _dry_run(connection: Connection, address: Address, plan: Plan, resume: bool, output_format: OutputFormat,
             allow_incomplete: bool) -> None:
    with open_cluster(connection, address) as cluster:
        snapshot = cluster.snapshot()
    refuse_incomplete(snapshot, allow_incomplete)
    changes = [] if resume else drift(plan.fingerprint, snapshot)
    if output_format is OutputFormat.json:
        console.print_json({"drift": changes, "batches": len(plan.batches), "moves": len(plan.moves),
                            "in_flight": len(snapshot.in_flight())})
    else:
        render_text(plan, details=False)
        for change in changes:
            console.warning(change)
        if snapshot.requested_moves:
            console.warning(f"a reassignment of {len(snapshot.requested_moves)} partitions is in progress")
        console.info("dry run: nothing written")
    if changes:
        raise Stale("the cluster changed since the plan was made: " + "; ".join(changes), hint="make a new plan")


@connection_options
@metrics_option("rollback")
def rollback(
    plan_file: PlanArg,
    connection: Connection,
    run: Run,
    inventory: Inventory = None,
    limit: Limit = None,
    execution: Annotated[str | None,
                         typer.Option("--execution",
                                      help="The execution to undo (default: the last apply of this plan). A rollback's "
                                           "id rolls the rollback back.")] = None,
    yes: Yes = False,
    resume: Annotated[bool, typer.Option("--resume", help="Continue an interrupted rollback of this plan.")] = False,
    throttle: Throttle = None,
    output_format: Format = OutputFormat.text,
    batch_timeout: BatchTimeout = None,
    stall_timeout: StallTimeout = None,
    poll: Poll = 0.5,
    accept_edited_plan: AcceptEdited = False,
) -> None:
    """Undo what an execution of this plan did: cancel its batch in flight (KIP-236 where offered, else wait for
    it), move every completed partition back to its original replicas in their original order (last batch
    first), restore the configs it changed, then elect the original preferred leaders. Itself an execution:
    locked, recorded, resumable (--resume) and cancellable. It runs at the execution's throttle unless --throttle
    gives another.

    Examples:

    \b
      kops rollback plans/staging.json -b broker1:9092
      kops rollback plans/staging.json -z zk1:2181/kafka \\
          --execution 20261121T101500Z-3f2a9c1d-apply --yes

    Exit codes: 0 done, 1 error, 3 stopped at a checkpoint, 4 the cluster changed since (cannot roll back
    safely), 5 another execution holds the lock.
    """
    rate = parse_throttle(throttle)
    if plan_file.is_dir():
        fleet = FleetRun(plan_file, connection, inventory, output_format, resume, poll, batch_timeout, rate=rate)
        raise typer.Exit(rollback_fleet(fleet, lambda plan: stall_seconds(stall_timeout, plan),
                                        lambda question: confirm(question, yes, output_format)))
    plan, digest = load_plan(plan_file, accept_edited_plan)
    run.cluster = run.cluster or plan.cluster
    address = resolve(connection, inventory, limit, plan.connect)
    confirm("roll back?", yes, output_format)
    outcome = run_execution(connection, address, output_format, poll, batch_timeout, stall_seconds(stall_timeout, plan),
                            lambda executor: executor.rollback(str(plan_file), digest, plan.cluster_id,
                                                               execution, resume, disk_limit(plan), rate),
                            check=False, observe=run.tally)
    run.records(outcome.record)
    for note in outcome.record.irreversible:
        console.warning(f"not undone: {note}")
    if outcome.exit_code is not ExitCode.OK:
        raise typer.Exit(outcome.exit_code)


def stall_seconds(given: float | None, plan: Plan) -> float:
    """--stall-timeout, else the playbook's execution.stall_timeout carried by the plan, else 5 minutes."""
    if given is not None:
        return given
    return plan.stall_timeout if plan.stall_timeout is not None else DEFAULT_STALL_SECONDS


def run_execution(connection: Connection, address: Address, output_format: OutputFormat, poll: float,
                  batch_timeout: float | None, stall_timeout: float, action: Callable[[Executor], Outcome],
                  check: bool = True, observe: Callable[[Event], None] | None = None) -> Outcome:
    """Signals, progress rendering and the session around one execution; exit 3/4/5 unless `check` is off.
    `observe` sees every event too (the run's metrics count the moves finished)."""
    controls = Controls()
    install_signals(controls)
    reporter = Reporter(output_format)
    emit = reporter if observe is None else _both(observe, reporter)
    try:
        with open_cluster(connection, address) as cluster:
            outcome = action(Executor(cluster, emit, controls, poll_seconds=poll, batch_timeout=batch_timeout,
                                      lock_wait=connection.session_timeout + 5, stall_timeout=stall_timeout))
    finally:
        reporter.close()
    if check and outcome.exit_code is not ExitCode.OK:
        raise typer.Exit(outcome.exit_code)
    return outcome


def _both(first: Callable[[Event], None], then: Callable[[Event], None]) -> Callable[[Event], None]:
    def emit(event: Event) -> None:
        first(event)
        then(event)

    return emit
