"""`--metrics-file PATH`: a command's run as Prometheus gauges (kops.metrics), written however the run ends.

node_exporter's textfile collector reads `*.prom` files from a folder on every scrape; a cron job that writes
its file there is seen by Prometheus. The file is written on every way out of the command, success, nothing to
do, a refusal, a stop at a checkpoint or an error, with the exit code `kops` exits with: an alert on
`kops_last_run_exit_code` or on the end time's age catches both a failing job and one that stopped running.
A command line typer cannot parse ends before the command starts, and writes nothing.
"""

from __future__ import annotations

import functools
import inspect
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from prometheus_client import write_to_textfile

from kops.cli import console
from kops.errors import ExitCode, KopsError, NotReady, UsageError
from kops.metrics import Imbalance, Moves, RunMetrics, Tally, outcome_of, registry
from kops.model.execution import ExecutionRecord
from kops.model.plan import Plan

F = TypeVar("F", bound=Callable[..., Any])

MetricsFile = Annotated[Path | None, typer.Option(
    "--metrics-file", help="Write this run's Prometheus gauges to PATH when it ends, however it ends (for "
                           "node_exporter's textfile collector: a .prom file in its folder; docs/cron.md).")]


@dataclass
class Run:
    """What a command learns as it goes, for its metrics file: its outcome, plan, imbalance and events."""

    command: str
    cluster: str
    started_at: float = field(default_factory=time.time)
    started: float = field(default_factory=time.monotonic)
    outcome: str | None = None  # None: the exit code says it
    planned: Moves = Moves()
    batches: Sequence[Any] = ()  # the plan's (or record's) batches the events are counted against
    imbalance: tuple[Imbalance, ...] = ()
    tally: Tally = field(default_factory=Tally)
    brokers_absent: int = 0  # kops rebalance --heal-after (docs/design/healing.md §4)
    brokers_healed: int = 0

    def plan(self, plan: Plan) -> None:
        """The plan this run carries out: its moves are what is planned, and what the events finish."""
        self.planned, self.batches = Moves.of(plan.moves), plan.batches

    def records(self, record: ExecutionRecord) -> None:
        """An execution whose moves are known from its record only (a rollback's: the inverse of what was done)."""
        self.planned, self.batches = Moves.of(m for b in record.batches for m in b.moves), record.batches

    def imbalanced(self, goal: str, before: float, after: float) -> None:
        """One goal's imbalance before and after the run (a goal list gives one per goal)."""
        self.imbalance = (*(i for i in self.imbalance if i.goal != goal), Imbalance(goal, before, after))

    def metrics(self, exit_code: int) -> RunMetrics:
        outcome = self.outcome if self.outcome is not None and exit_code in (0, 3) else outcome_of(exit_code)
        return RunMetrics(self.command, self.cluster, self.started_at, time.time(),
                          round(time.monotonic() - self.started, 3), exit_code, outcome, self.planned,
                          self.tally.completed(self.batches), self.imbalance, self.brokers_absent,
                          self.brokers_healed)


def metrics_option(name: str) -> Callable[[F], F]:
    """Give `command` (which takes `run: Run`) the --metrics-file option: its run is written when it ends.
    Put it under `@connection_options`, which then passes the `connection` the cluster label is read from."""

    def decorate(command: F) -> F:
        signature = inspect.signature(command, eval_str=True)
        kept = [p for p in signature.parameters.values() if p.name != "run"]
        added = inspect.Parameter("metrics_file", inspect.Parameter.KEYWORD_ONLY, default=None,
                                  annotation=MetricsFile)

        @functools.wraps(command)
        def wrapper(*args: Any, metrics_file: Path | None = None, **kwargs: Any) -> Any:
            with recorded(metrics_file, name, _cluster(kwargs)) as run:
                return command(*args, run=run, **kwargs)

        wrapper.__signature__ = signature.replace(parameters=[*kept, added])  # type: ignore[attr-defined]  # typer reads it
        wrapper.__annotations__ = {p.name: p.annotation for p in [*kept, added]}
        return wrapper  # type: ignore[return-value]  # same call, other parameters: what typer is shown

    return decorate


def _cluster(options: dict[str, Any]) -> str:
    """The `cluster` label: the inventory's cluster, else -b, else -z (a plan's own cluster is set once read)."""
    connection = options.get("connection")
    given = [options.get("limit"), getattr(connection, "bootstrap_server", None),
             getattr(connection, "zookeeper", None)]
    return next((g for g in given if g), "")


@contextmanager
def recorded(path: Path | None, command: str, cluster: str) -> Iterator[Run]:
    """The run of `command`, written to `path` (when given) as it ends, with the exit code it ends with."""
    run = Run(command, cluster)
    if path is None:
        yield run
        return
    _check(path)
    try:
        yield run
    except BaseException as exc:
        if isinstance(exc, NotReady) and run.outcome is None:
            run.outcome = "refused"
        try:
            _write(path, run.metrics(_exit_code(exc)))
        except KopsError as failed:
            console.error(failed)  # the run's own error follows, and decides the exit code
        raise
    _write(path, run.metrics(ExitCode.OK))


def _exit_code(exc: BaseException) -> int:
    """The code `kops` exits with for this exception (kops.cli.main's mapping)."""
    if isinstance(exc, KopsError):
        return int(exc.exit_code)
    if isinstance(exc, typer.Exit):
        return int(exc.exit_code)
    if isinstance(exc, SystemExit):
        return exc.code if isinstance(exc.code, int) else ExitCode.ERROR
    return ExitCode.ERROR


def _check(path: Path) -> None:
    """Before anything is done: a metrics file that could not be written would leave the last run's in place."""
    folder = path.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise UsageError("cannot write the metrics file here: its folder is missing or not writable",
                         where=str(path), hint="create the folder, or choose node_exporter's textfile folder")
    if path.suffix != ".prom":
        console.warning(f"{path}: node_exporter's textfile collector reads only *.prom files")


def _write(path: Path, metrics: RunMetrics) -> None:
    try:
        write_to_textfile(str(path), registry(metrics))  # a temporary file beside it, renamed over it
    except OSError as exc:
        raise UsageError(f"cannot write the metrics file: {exc.strerror}", where=str(path)) from None
