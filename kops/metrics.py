"""What one run of `kops rebalance`, `kops apply` or `kops rollback` did, as Prometheus gauges (issue 38).

Cron and systemd timers run kops unattended; node_exporter's textfile collector is how such jobs report to
Prometheus. The CLI fills a `RunMetrics` from the run's outcome and its executor events (`Tally`), and writes
`registry(metrics)` with prometheus-client's `write_to_textfile` (a temporary file renamed over the old one, so
a scrape never reads half a file). Every value is a gauge of the last run: the file is rewritten by each run, so
nothing in it can be a counter. Names follow Prometheus's conventions: a `kops_` prefix, base units, the unit
last (`_seconds`, `_bytes`, `_ratio`); every series carries the `command` and the `cluster` it ran against.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kops.errors import ExitCode
from kops.executor.events import BatchDone, Event, MoveDone
from kops.model.plan import Move, counted

PREFIX = "kops_last_run_"
# What a run can end as: the rebalance summary's `status` values, then what an apply adds and the exit codes 4, 5
# and 1 say. One series per outcome, 1 for the run's and 0 for the rest, so an alert can match on it.
OUTCOMES = ("applied", "planned", "noop", "refused", "stopped", "stale", "locked", "error")
_BY_EXIT_CODE: dict[int, str] = {ExitCode.OK: "applied", ExitCode.STOPPED: "stopped", ExitCode.STALE: "stale",
                                  ExitCode.LOCKED: "locked"}


def outcome_of(exit_code: int) -> str:
    """The outcome an exit code says when the run did not name its own (a refusal names itself: also exit 3)."""
    return _BY_EXIT_CODE.get(exit_code, "error")


@dataclass(frozen=True)
class Imbalance:
    """One goal's imbalance (kops rebalance's: the share of the load above the live brokers' fair share)."""

    goal: str
    before: float
    after: float


@dataclass(frozen=True)
class Moves:
    """Replica moves, leader-only changes and bytes copied: of a plan, or of the moves a run finished."""

    replica: int = 0
    leader: int = 0
    bytes: int = 0

    @classmethod
    def of(cls, moves: Iterable[Move]) -> Moves:
        """Counted as the plan's summary counts them: a replica per new broker, a leader-only change per reorder."""
        return cls(*counted(moves))


@dataclass(frozen=True)
class RunMetrics:
    """The last run, as the metrics file reports it. Brokers absent and healed: `kops rebalance`'s (0 elsewhere)."""

    command: str
    cluster: str
    started_at: float  # Unix seconds
    ended_at: float
    seconds: float  # by the monotonic clock
    exit_code: int
    outcome: str
    planned: Moves = Moves()
    completed: Moves = Moves()
    imbalance: tuple[Imbalance, ...] = ()
    brokers_absent: int = 0
    brokers_healed: int = 0


class _Batch(Protocol):
    """A plan's batch or an execution record's: its index and its moves."""

    @property
    def index(self) -> int: ...

    @property
    def moves(self) -> Sequence[Move]: ...


@dataclass
class Tally:
    """The executor's events, kept as far as the metrics need them: which batches (and, rolling, which moves)
    this run finished. A resume counts what it finished itself, not what the interrupted run had."""

    batches: set[int] = field(default_factory=set)
    moves: set[tuple[str, int]] = field(default_factory=set)

    def __call__(self, event: Event) -> None:
        match event:
            case BatchDone():
                self.batches.add(event.batch)
            case MoveDone():
                self.moves.add((event.topic, event.partition))

    def completed(self, batches: Iterable[_Batch]) -> Moves:
        """The moves of `batches` (a plan's, or a record's) that this run saw finish."""
        return Moves.of(m for b in batches for m in b.moves
                        if b.index in self.batches or (m.topic, m.partition) in self.moves)


def registry(metrics: RunMetrics) -> CollectorRegistry:
    """A registry of its own holding only this run's gauges: what `write_to_textfile` writes."""
    found = CollectorRegistry(auto_describe=False)
    found.register(_Collector(metrics))
    return found


@dataclass(frozen=True)
class _Collector(Collector):
    metrics: RunMetrics

    def collect(self) -> Iterator[Metric]:
        m = self.metrics
        base = {"command": m.command, "cluster": m.cluster}
        yield _gauge("start_timestamp_seconds", "When the last run started, in Unix seconds.", base, m.started_at)
        yield _gauge("end_timestamp_seconds", "When the last run ended, in Unix seconds.", base, m.ended_at)
        yield _gauge("duration_seconds", "Seconds the last run took.", base, m.seconds)
        yield _gauge("exit_code", "The last run's exit code (docs/cli.md: 0 done, 1 error, 3 refused or stopped at "
                                  "a checkpoint, 4 stale plan, 5 locked).", base, m.exit_code)
        yield _family("outcome", "1 for how the last run ended, 0 for the others: " + ", ".join(OUTCOMES) + ".",
                      [({**base, "outcome": o}, float(o == m.outcome)) for o in OUTCOMES])
        yield from _moves(base, m.planned, m.completed)
        yield from _imbalance(base, m.imbalance)
        yield _gauge("brokers_absent", "Brokers holding replicas the last run found not registered, however long "
                                       "gone (kops rebalance; docs/design/healing.md).", base, m.brokers_absent)
        yield _gauge("brokers_healed", "Absent brokers whose replicas the last run re-created on live brokers, "
                                       "counted once its apply finished (kops rebalance --heal-after).", base,
                     m.brokers_healed)


def _moves(base: dict[str, str], planned: Moves, completed: Moves) -> Iterator[Metric]:
    def kinds(moves: Moves) -> list[tuple[dict[str, str], float]]:
        return [({**base, "kind": "replica"}, moves.replica), ({**base, "kind": "leader"}, moves.leader)]

    yield _family("planned_moves", "Moves the last run's plan holds: kind=replica counts a replica per new broker, "
                                   "kind=leader a change of preferred leader only.", kinds(planned))
    yield _family("completed_moves", "Moves of the plan the last run finished (a resume counts its own).",
                  kinds(completed))
    yield _gauge("planned_bytes", "Bytes the last run's plan copies (0 without partition sizes).", base,
                 planned.bytes)
    yield _gauge("completed_bytes", "Bytes copied by the moves the last run finished (0 without partition sizes).",
                 base, completed.bytes)


def _imbalance(base: dict[str, str], imbalance: tuple[Imbalance, ...]) -> Iterator[Metric]:
    """Only where the run measured it (a rebalance that read the cluster): an absent series is not a 0."""
    if not imbalance:
        return
    what = " (the share of the load above the live brokers' fair share; 0 is even)"
    yield _family("imbalance_before_ratio", "Imbalance per goal when the last run read the cluster" + what,
                  [({**base, "goal": i.goal}, i.before) for i in imbalance])
    yield _family("imbalance_after_ratio", "Imbalance per goal the last run's plan reaches" + what,
                  [({**base, "goal": i.goal}, i.after) for i in imbalance])


def _gauge(name: str, documentation: str, labels: dict[str, str], value: float) -> Metric:
    return _family(name, documentation, [(labels, value)])


def _family(name: str, documentation: str, samples: list[tuple[dict[str, str], float]]) -> Metric:
    unit = next((u for u in ("seconds", "bytes", "ratio") if name.endswith("_" + u)), "")
    family = GaugeMetricFamily(PREFIX + name, documentation, labels=list(samples[0][0]), unit=unit)
    for labels, value in samples:
        family.add_metric(list(labels.values()), value)
    return family
