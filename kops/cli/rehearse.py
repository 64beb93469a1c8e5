"""`kops rehearse`: run a production plan against a lab clone of its cluster first, then roll it back.

The clone (kops.rehearsal.sampling) has the snapshot's brokers, racks, the plan's topics whole and a sample of
the rest; its bytes and rates are scaled (kops.rehearsal.scaling) so it runs in minutes; the plan runs through
the same executor as `kops apply` and `kops rollback`; the report (kops.rehearsal.report) compares what it
measured with the plan's estimates, in production time.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import typer

from kops.cli import console
from kops.cli.apply import rolling_of
from kops.cli.connection import Address, Connection, open_cluster
from kops.cli.execution import Reporter, install_signals, load_plan
from kops.cli.fleet import print_recap
from kops.cli.options import OutputFormat, parse_option
from kops.cli.plan import PlanFormat
from kops.cluster.port import Cluster
from kops.errors import EnvironmentProblem, ExitCode, KopsError, UsageError
from kops.executor.events import BatchStarted, Done, Event, LostLock, Message, RollingStarted, Started, Stopped
from kops.executor.executor import Controls, Executor, Outcome
from kops.fleet.record import PLAN_SUFFIX, cluster_of
from kops.fleet.results import FAILED, OK, STOPPED, ClusterResult
from kops.lab import clone as lab_clone
from kops.lab.engines import ENGINES, KOPS
from kops.model import plan_format, snapshot_format
from kops.model.partitions import TopicPartition
from kops.model.plan import Batch, Plan, Rolling
from kops.model.snapshot import Snapshot
from kops.planner.fingerprint import drift
from kops.planner.markdown import duration
from kops.rehearsal import report as findings
from kops.rehearsal.calibration import Latency, measure
from kops.rehearsal.markdown import render_markdown
from kops.rehearsal.observer import Observations, Observer
from kops.rehearsal.sampling import DEFAULT_MAX_PARTITIONS, Sample, sample, without_internal
from kops.rehearsal.scaling import REAL_RATE, Scaling, choose, clone_plan, machine_time_scale
from kops.sizes.reader import read_sizes
from kops.units import format_size, parse_rate

READY_SECONDS = 180.0  # how long the clone may go without getting closer to settled before the rehearsal gives up
THROTTLE_SETTLE = 2.0  # brokers apply throttles from config notifications, asynchronously: a moment that is
# negligible in production is a large share of a time-compressed batch, so the clone waits longer for them
MIN_STALL_SECONDS = 20.0  # clone seconds: below this a clone's own start-up hiccups would read as stalls


@dataclass
class Run:
    """What one execution on the clone left: its events (monotonic time, event) and outcome."""

    events: findings.Events = field(default_factory=list)
    outcome: Outcome | None = None
    seen: Observations = field(default_factory=Observations)

    def seconds(self) -> float | None:
        marks = [t for t, e in self.events if isinstance(e, Started | Done)]
        finished = any(isinstance(e, Done) for _t, e in self.events)
        return max(marks) - min(marks) if len(marks) >= 2 and finished else None

    def stopped(self) -> str | None:
        reasons = [e.reason for _t, e in self.events if isinstance(e, Stopped | LostLock)]
        return reasons[-1] if reasons else None


def rehearse(
    plan_file: Annotated[Path,
                         typer.Argument(help="The plan file (kops plan --snapshot SNAP -o FILE).", show_default=False)],
    snapshot_file: Annotated[Path | None, typer.Option("--snapshot", help="The kops-snapshot/1 file the plan was "
                                                                       "made from.", show_default=False)] = None,
    engine: Annotated[str, typer.Option(help="The clone's engine: kops (simulated bytes, for scale), kafka-4 or "
                                             "kafka-3.9 (real bytes, fewer of them, for fidelity).")] = KOPS,
    scale: Annotated[float | None, typer.Option(help="Production seconds per rehearsal second. Default: the plan's "
                                                     "estimate over five minutes (at least 1).", min=0.001)] = None,
    max_partitions: Annotated[int, typer.Option(help="Partitions in the clone at most, beyond the plan's own topics "
                                                     "(kept whole); the rest sampled per broker.",
                                                     min=1)] = DEFAULT_MAX_PARTITIONS,
    sizes_file: Annotated[Path | None, typer.Option("--sizes", help="A sizes summary (kops sizes summarize): sizes of "
                                                    "the partitions the plan does not move, and growth rates that "
                                                    "become background traffic.")] = None,
    report_file: Annotated[Path | None, typer.Option("--report", help="Also write the report here (Markdown, or JSON "
                                                     "with --format json).")] = None,
    output_format: Annotated[PlanFormat, typer.Option("--format", "-f", help="markdown (default), text or json.",
                                                      case_sensitive=False)] = PlanFormat.markdown,
    tolerance: Annotated[float, typer.Option(help="How far a measured duration may fall from its estimate, as a "
                                                  "fraction.", min=0.01)] = findings.TOLERANCE,
    stop_broker: Annotated[int | None, typer.Option("--stop-broker", help="Stop this broker of the clone when the "
                                                    "execution starts (what if it fails?); started again before the "
                                                    "rollback.")] = None,
    rolling: Annotated[bool,
                       typer.Option("--rolling", help="Rehearse rolling execution (as kops apply --rolling).")] = False,
    real_rate: Annotated[str, typer.Option("--lab-rate", help="Real engines: the clone's throttle per broker; "
                                                              "production's throttle scales to it.")] = "2MiB/s",
    lab_dir: Annotated[Path | None, typer.Option("--dir", help="The clone's lab folder (default: a temporary one, "
                                                               "removed afterwards).")] = None,
    poll: Annotated[float, typer.Option("--poll", help="Seconds between progress reads.", min=0.05)] = 0.2,
    snapshot_dir: Annotated[Path | None, typer.Option(
        "--snapshot-dir", help="A fleet (PLAN is a folder of CLUSTER.plan.json): each cluster's snapshot, "
                               "DIR/CLUSTER.json.")] = None,
    report_dir: Annotated[Path | None, typer.Option(
        "--report-dir", help="A fleet: also write each cluster's report as DIR/CLUSTER.md (or .json).")] = None,
) -> None:
    """Rehearse a plan on a lab clone of its cluster: build the clone from the snapshot (brokers with its ids and
    racks, the plan's topics with their configs and assignments, sizes scaled), apply the plan through the same
    executor as kops apply, roll it back through the same path as kops rollback, check the layout came back, and
    report estimated against measured durations in production time.

    Examples:

    \b
      kops rehearse plans/decommission.json --snapshot snaps/prod.json \\
          --report rehearsal.md
      kops rehearse plans/decommission.json --snapshot snaps/prod.json \\
          --engine kafka-4 --max-partitions 300
      kops rehearse plans/decommission.json --snapshot snaps/prod.json \\
          --stop-broker 4 --format json
      kops rehearse plans/prod --snapshot-dir snaps/prod --report-dir reports

    Exit codes: 0 the estimates hold within the tolerance, 2 some are off beyond it (named), 3 a batch stalled, a
    health gate stopped the run, or the rollback did not restore the layout, 1 the rehearsal could not run.
    A fleet's folder of plans is rehearsed one cluster at a time (a clone takes the machine); its exit code is
    the first cluster's that was not 0.
    """
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}", hint=f"one of: {', '.join(ENGINES)}")

    def one(path: Path, snapshot_path: Path) -> findings.Report:
        plan, _digest = load_plan(path)
        snap = _snapshot(snapshot_path, plan)
        plan, skipped = without_internal(plan)
        sizes, traffic = _sizes(plan, sizes_file)
        rate = int(parse_option(parse_rate, real_rate, "--lab-rate")) if engine != KOPS else REAL_RATE
        scaling = choose(plan, real=engine != KOPS, factor=scale, real_rate=rate,
                         machine=machine_time_scale(len(snap.brokers), len(os.sched_getaffinity(0))))
        chosen = sample(snap, plan, sizes, max_partitions)
        with _lab_folder(lab_dir) as folder:
            report = _rehearse(plan, chosen, scaling, engine, folder, traffic, stop_broker,
                               rolling_of(plan, rolling, None, None), poll, tolerance)
        report.notes[:0] = skipped
        return report

    if plan_file.is_dir():
        if sizes_file is not None or lab_dir is not None or report_file is not None:
            raise UsageError("--sizes, --dir and --report name one cluster's", hint="a fleet takes --report-dir")
        raise typer.Exit(_rehearse_fleet(plan_file, snapshot_dir, report_dir, output_format, one))
    if snapshot_file is None:
        raise UsageError("no snapshot given", hint="pass --snapshot FILE, the snapshot the plan was made from")
    report = one(plan_file, snapshot_file)
    _emit(report, output_format, report_file)
    if report.exit_code:
        raise typer.Exit(report.exit_code)


def _snapshot(path: Path, plan: Plan) -> Snapshot:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read the snapshot: {exc.strerror}", where=str(path),
                         hint="save one with `kops state --save FILE`") from None
    snap = snapshot_format.loads(data, str(path))
    changes = drift(plan.fingerprint, snap)
    if changes:
        raise UsageError("the plan was not made from this snapshot: " + "; ".join(changes[:3]), where=str(path),
                         hint="pass the snapshot given to kops plan --snapshot")
    return snap


def _sizes(plan: Plan, path: Path | None) -> tuple[dict[TopicPartition, int], dict[str, float]]:
    """Production bytes per partition (the plan's for what it moves, the summary's for the rest) and each
    topic's write rate in bytes/s (its background traffic)."""
    sizes: dict[TopicPartition, int] = {}
    traffic: dict[str, float] = {}
    if path is not None:
        found = read_sizes(path)
        sizes.update(found.bytes)
        for tp, rate in found.write.items():
            if rate > 0:
                traffic[tp.topic] = traffic.get(tp.topic, 0.0) + rate
    sizes.update({m.tp: m.bytes for m in plan.moves if m.bytes})
    return sizes, traffic


@contextmanager
def _lab_folder(given: Path | None) -> Iterator[Path]:
    if given is not None:
        yield given
        return
    with tempfile.TemporaryDirectory(prefix="kops-rehearsal-") as tmp:
        yield Path(tmp)


def _rehearse(plan: Plan, chosen: Sample, scaling: Scaling, engine: str, folder: Path, traffic: dict[str, float],
              stop_broker: int | None, rolling: Rolling | None, poll: float, tolerance: float) -> findings.Report:
    racks = {b.id: b.rack or "" for b in chosen.snapshot.brokers}
    if stop_broker is not None and stop_broker not in racks:
        raise UsageError(f"--stop-broker {stop_broker}: the snapshot has no such broker",
                         hint=f"brokers: {sorted(racks)}")
    began = time.monotonic()
    with console.err.status(f"starting a clone of {len(racks)} brokers on the {engine} engine"):
        lab = lab_clone.start(folder / "lab", engine, racks, time_scale=scaling.time_scale, throttle=scaling.throttle)
    try:
        connection = Connection(zookeeper=lab.zookeeper, bootstrap_server=lab.bootstrap)
        address = Address("zookeeper", lab.zookeeper) if lab.zookeeper else Address("admin", lab.bootstrap or "")
        with console.err.status(f"building the clone: {chosen.describe()}"):
            cluster_id = _build(lab, connection, address, chosen, scaling, traffic)
        with console.err.status("measuring the clone's latency"), open_cluster(connection, address) as cluster:
            delay = measure(cluster, sorted(racks), max((len(b.moves) for b in plan.batches), default=1))
        built = time.monotonic() - began
        path = folder / "clone-plan.json"
        path.write_bytes(plan_format.dumps(clone_plan(plan, cluster_id, scaling)))
        clone, digest = load_plan(path)
        stall = max(MIN_STALL_SECONDS, (plan.stall_timeout or 300.0) / scaling.factor)
        hook = (lambda: lab.stop_broker(stop_broker)) if stop_broker is not None else None
        forward = _execute(connection, address, clone.batches, poll, stall, hook,
                           lambda ex: ex.apply(clone, str(path), digest, False,
                                               scaling.throttle if engine != KOPS else None,
                                               rolling))
        if stop_broker is not None:
            with console.err.status(f"starting broker {stop_broker} again for the rollback"):
                lab.lab.start_broker(stop_broker)
        backward = _execute(connection, address, clone.rollback.batches, poll, stall, None,
                            lambda ex: ex.rollback(str(path), digest, cluster_id))
        differences = _layout_differences(connection, address, chosen.snapshot, plan)
    finally:
        lab.down()
    return _report(plan, chosen, scaling, engine, forward, backward, differences, built, traffic, tolerance, delay)


def _build(lab: lab_clone.CloneLab, connection: Connection, address: Address, chosen: Sample, scaling: Scaling,
           traffic: dict[str, float]) -> str | None:
    """Topics through the cluster port, bytes at the leaders, background traffic; the clone's cluster id."""
    with open_cluster(connection, address) as cluster:
        for name, topic in sorted(chosen.snapshot.topics.items()):
            cluster.create_topic(name, {p: part.replicas for p, part in sorted(topic.partitions.items())}, topic.config)
        _wait_ready(cluster, set(chosen.snapshot.topics))
        per_topic: dict[str, dict[int, int]] = {}
        for tp, count in chosen.sizes.items():
            per_topic.setdefault(tp.topic, {})[tp.partition] = scaling.clone_bytes(count)
        lab.fill(per_topic)
        _wait_ready(cluster, set(chosen.snapshot.topics))
        _wait_caught_up(cluster, chosen.snapshot)
        for name, rate in sorted(traffic.items()):
            if name in chosen.snapshot.topics:
                lab.ingest(name, scaling.clone_rate(rate))
        return cluster.snapshot(only_topics=set()).cluster_id


class _Settling:
    """A deadline that moves while the clone gets closer: a large clone on a small machine settles slowly, and
    only one that stops getting closer for READY_SECONDS has not settled."""

    def __init__(self) -> None:
        self.best: float | None = None
        self.deadline = time.monotonic() + READY_SECONDS

    def stuck(self, remaining: float) -> bool:
        if self.best is None or remaining < self.best:
            self.best, self.deadline = remaining, time.monotonic() + READY_SECONDS
        return time.monotonic() > self.deadline


def _wait_ready(cluster: Cluster, topics: set[str]) -> None:
    """Until every partition of `topics` has a leader and all its replicas in sync."""
    settling = _Settling()
    while True:
        snap = cluster.snapshot(only_topics=topics)
        waiting = [f"{name}-{p}" for name in sorted(topics) for p, part in
                   (snap.topics[name].partitions.items() if name in snap.topics else [(-1, None)])
                   if part is None or part.state is None or part.leader < 0 or set(part.replicas) - set(part.isr)]
        if not waiting:
            return
        if settling.stuck(len(waiting)):
            raise EnvironmentProblem(f"the clone did not settle: {len(waiting)} partition(s) without a leader or "
                                     f"with replicas out of sync, none closer for {READY_SECONDS:.0f} s, e.g. "
                                     f"{waiting[0]}", hint="see the lab's logs (--dir)")
        time.sleep(0.5)


def _wait_caught_up(cluster: Cluster, snap: Snapshot) -> None:
    """Until every follower holds its leader's whole log: a follower still copying the fill would let a new
    replica join the ISR at once (its offset at the high watermark) and copy unthrottled."""
    replicas = [(TopicPartition(name, p), b) for name, topic in sorted(snap.topics.items())
                for p, part in sorted(topic.partitions.items()) for b in part.replicas]
    settling = _Settling()
    while True:
        behind = {k: v for k, v in cluster.lags(replicas).items() if v > 0}
        if not behind:
            return
        if settling.stuck(sum(behind.values())):
            (tp, broker), lag = next(iter(behind.items()))
            raise EnvironmentProblem(f"the clone's followers did not catch up: {len(behind)} replica(s) behind, none "
                                     f"closer for {READY_SECONDS:.0f} s, e.g. {tp} on broker {broker} by "
                                     f"{format_size(lag)}", hint="see the lab's logs (--dir)")
        time.sleep(0.5)


def _execute(connection: Connection, address: Address, batches: tuple[Batch, ...], poll: float, stall: float,
             on_start: Callable[[], None] | None, action: Callable[[Executor], Outcome]) -> Run:
    """One execution on the clone with its events timed and an observer beside it, watching the batch in
    flight (every move when rolling)."""
    run = Run()
    reporter = Reporter(OutputFormat.text, to_stderr=True)
    controls = Controls()
    install_signals(controls)
    by_index = {b.index: list(b.moves) for b in batches}
    observer: Observer | None = None

    def record(event: Event) -> None:
        run.events.append((time.monotonic(), event))
        if isinstance(event, Started) and on_start is not None:
            on_start()
        if observer is not None and isinstance(event, BatchStarted):
            observer.watch(by_index.get(event.batch, []))
        if observer is not None and isinstance(event, RollingStarted):
            observer.watch([m for b in batches for m in b.moves])
        reporter(event)

    try:
        with open_cluster(connection, address) as watched, open_cluster(connection, address) as cluster:
            observer = Observer(watched, []).start()
            try:
                run.outcome = action(Executor(cluster, record, controls, poll_seconds=poll, lock_wait=15.0,
                                              stall_timeout=stall, throttle_settle=THROTTLE_SETTLE))
            finally:
                run.seen = observer.stop()
    finally:
        reporter.close()
    return run


def _layout_differences(connection: Connection, address: Address, want: Snapshot, plan: Plan) -> list[str]:
    """Where the plan's topics on the clone differ from the snapshot: replicas in order, and preferred leaders."""
    topics = {m.topic for m in plan.moves}
    with open_cluster(connection, address) as cluster:
        now = cluster.snapshot(only_topics=topics)
    out = []
    for name in sorted(topics):
        for p, part in sorted(want.topics[name].partitions.items()):
            found = now.partition(TopicPartition(name, p))
            if found is None or found.replicas != part.replicas:
                out.append(f"{name}-{p} has {list(found.replicas) if found else 'no replicas'}, "
                           f"the snapshot {list(part.replicas)}")
    return out


def _report(plan: Plan, chosen: Sample, scaling: Scaling, engine: str, forward: Run, backward: Run,
            differences: list[str], built: float, traffic: dict[str, float], tolerance: float,
            delay: Latency) -> findings.Report:
    mode = "rolling" if any(isinstance(e, RollingStarted) for _t, e in forward.events) else "batches"
    if mode == "rolling":
        rows = [findings.rolling_result(plan, scaling, forward.events, forward.seen, delay)]
    else:
        rows = findings.batch_results(plan, scaling, forward.events, forward.seen, delay)
    measured = None if any(r.measured_seconds is None for r in rows) else sum(r.measured_seconds or 0 for r in rows)
    back = backward.seconds()
    notes = [e.text for _t, e in forward.events if isinstance(e, Message)]
    if scaling.slow_motion:
        notes.append(f"slow motion: {len(chosen.snapshot.brokers)} brokers are more than this machine runs at full "
                     f"speed, so the clone's clock ran at {scaling.time_scale:.2f}x wall time, its bytes divided by as "
                     f"much more")
    return findings.Report(
        cluster=plan.cluster, engine=engine, sample=chosen.describe(), scaling=scaling.as_dict(), mode=mode,
        batches=rows,
        estimate_seconds=rows[0].estimate_seconds if mode == "rolling" else plan.summary.estimated_seconds,
        measured_seconds=measured,
        stopped=forward.stopped(), rollback_seconds=None if back is None else scaling.production_seconds(back),
        rollback_stopped=backward.stopped(), layout_restored=not differences, layout_differences=differences,
        clone_seconds=round(built, 1), latency_seconds=round(delay.one, 3),
        latency_batch_seconds=round(delay.many, 3), apply_wall_seconds=_rounded(forward.seconds()),
        rollback_wall_seconds=_rounded(back), tolerance=tolerance, traffic=traffic, notes=notes)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _rehearse_fleet(directory: Path, snapshot_dir: Path | None, report_dir: Path | None, output_format: PlanFormat,
                    one: Callable[[Path, Path], findings.Report]) -> int:
    """Every DIR/*.plan.json rehearsed from DIR/CLUSTER.json of --snapshot-dir, one cluster at a time; a recap;
    the first cluster's non-zero exit code (0 when every estimate held)."""
    if snapshot_dir is None:
        raise UsageError("a fleet is rehearsed from its snapshots", hint="pass --snapshot-dir DIR (DIR/CLUSTER.json)")
    files = sorted(directory.glob(f"*{PLAN_SUFFIX}"))
    if not files:
        raise UsageError(f"no *{PLAN_SUFFIX} here", where=str(directory))
    found = []
    for path in files:
        cluster, started = cluster_of(path.name), time.monotonic()
        try:
            report = one(path, snapshot_dir / f"{cluster}.json")
        except KopsError as exc:
            console.error(f"{cluster}: {exc.one_line()}")
            found.append(ClusterResult(cluster, FAILED, exc.exit_code, exc.one_line(),
                                       seconds=time.monotonic() - started))
            continue
        suffix = "json" if output_format is PlanFormat.json else "md"
        _emit(report, output_format, report_dir / f"{cluster}.{suffix}" if report_dir is not None else None)
        status = STOPPED if report.exit_code == ExitCode.STOPPED else OK
        found.append(ClusterResult(cluster, status, report.exit_code, seconds=time.monotonic() - started))
    print_recap(found, OutputFormat.json if output_format is PlanFormat.json else OutputFormat.text,
                "REHEARSAL RECAP")
    return next((int(r.exit_code) for r in found if r.exit_code), 0)


def _emit(report: findings.Report, output_format: PlanFormat, report_file: Path | None) -> None:
    """The report on stdout (progress went to stderr) and, with --report, in a file."""
    document = json.dumps(report.as_dict(), indent=2, sort_keys=True) + "\n"
    markdown = render_markdown(report) + "\n"
    if output_format is PlanFormat.json:
        console.out.print(document, markup=False, highlight=False, soft_wrap=True, end="")
    elif output_format is PlanFormat.markdown:
        console.out.print(markdown, markup=False, highlight=False, soft_wrap=True, end="")
    else:
        _text(report)
    if report_file is not None:
        report_file.parent.mkdir(parents=True, exist_ok=True)
        report_file.write_text(document if output_format is PlanFormat.json else markdown)
        console.info(f"report written to {report_file}")


def _text(report: findings.Report) -> None:
    table = console.table(f"rehearsal of {report.cluster} on {report.engine} (production time)", ">batch", ">moves",
                          ">bytes", ">estimate", ">measured", ">error", ">URP·s", "slowest")
    for b in report.batches:
        table.add_row(str(b.index or "all"), str(b.moves), format_size(b.bytes), duration(b.estimate_seconds),
                      duration(b.measured_seconds) if b.measured_seconds is not None else "[red]did not finish[/]",
                      "n/a" if b.error is None else f"{b.error:+.0%}", f"{b.urp_seconds:,.0f}", b.slowest or "-")
    console.out.print(table)
    style = {0: "green", 2: "yellow"}.get(report.exit_code, "red")
    console.out.print(f"[{style}]{report.verdict()}[/]", highlight=False)
