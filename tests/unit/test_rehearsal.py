"""The pure parts of `kops rehearse`: what the clone holds, how it is scaled, what the report concludes, and the
Mermaid blocks (on the golden decommission plan and its snapshot)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from kops.errors import UsageError
from kops.executor.events import BatchDone, BatchStarted, Stalled, Started
from kops.model import plan_format, snapshot_format
from kops.model.partitions import Partition, PartitionState, TopicPartition
from kops.model.topics import Topic
from kops.planner.fingerprint import drift
from kops.planner.mermaid import bar_chart, gantt
from kops.rehearsal.markdown import render_markdown
from kops.rehearsal.observer import Observations
from kops.rehearsal.report import Events, Report, batch_results
from kops.rehearsal.sampling import sample, without_internal
from kops.rehearsal.scaling import MAX_TIME_SCALE, choose, clone_plan, machine_time_scale

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "decommission"
PLAN = plan_format.loads((GOLDEN / "expected-plan.json").read_bytes(), "plan")
SNAPSHOT = snapshot_format.loads((GOLDEN / "snapshot.json").read_bytes(), "snapshot")


def with_bystander(partitions: int) -> object:
    """The golden snapshot plus a topic the plan does not touch, led round-robin by brokers 1..6."""
    parts = {p: Partition((p % 6 + 1, (p + 1) % 6 + 1),
                          state=PartitionState(p % 6 + 1, 0, (p % 6 + 1, (p + 1) % 6 + 1), 1))
             for p in range(partitions)}
    return replace(SNAPSHOT, topics={**SNAPSHOT.topics, "bystander": Topic("bystander", parts)})


def test_the_plans_topics_stay_whole_and_the_rest_is_sampled_per_broker() -> None:
    snap = with_bystander(600)
    whole = sum(len(snap.topics[t].partitions) for t in ("clicks", "logs", "orders", "payments"))
    chosen = sample(snap, PLAN, {}, max_partitions=whole + 60)
    assert set(chosen.whole_topics) == {"clicks", "logs", "orders", "payments"}
    assert drift(PLAN.fingerprint, chosen.snapshot) == []  # the plan checks the clone as it checks production
    kept = chosen.snapshot.topics["bystander"]
    assert sorted(kept.partitions) == list(range(len(kept.partitions)))  # renumbered densely
    assert sum(k for k, _n in chosen.sampled.values()) == 60 and chosen.sampled["bystander"][1] == 600
    leaders = Counter(p.leader for p in kept.partitions.values())
    assert set(leaders) == set(range(1, 7)) and all(9 <= n <= 10 for n in leaders.values())  # each broker its share
    assert sample(snap, PLAN, {}, max_partitions=whole + 60) == chosen  # deterministic
    assert "60 more sampled per broker from 2 other topics" in chosen.describe()


def test_sampling_keeps_sizes_with_their_renumbered_partitions() -> None:
    snap = with_bystander(12)
    sizes = {TopicPartition("bystander", p): 1000 + p for p in range(12)}
    chosen = sample(snap, PLAN, sizes, max_partitions=36 + 6)
    kept = [tp for tp in chosen.sizes if tp.topic == "bystander"]
    assert sorted(tp.partition for tp in kept) == list(range(len(kept)))
    assert all(1000 <= chosen.sizes[tp] < 1012 for tp in kept)


def test_internal_topics_are_never_cloned_and_their_moves_not_rehearsed() -> None:
    internal = Topic("__kops", {0: Partition((1, 2))})
    snap = replace(SNAPSHOT, topics={**SNAPSHOT.topics, "__kops": internal})
    assert "__kops" not in sample(snap, PLAN, {}).snapshot.topics
    first = PLAN.batches[0]
    moved = replace(first.moves[0], topic="__kops")
    with_internal = replace(PLAN, batches=(replace(first, moves=(moved,)), *PLAN.batches[1:]))
    trimmed, said = without_internal(with_internal)
    assert said == ["the moves of Kafka's internal topic __kops (1) are not rehearsed: a clone has its own"]
    assert [b.index for b in trimmed.batches] == list(range(1, len(trimmed.batches) + 1))
    assert all(m.topic != "__kops" for m in trimmed.moves) and len(trimmed.moves) == len(PLAN.moves) - len(first.moves)
    assert without_internal(PLAN) == (PLAN, [])


def test_scaling_divides_durations_by_the_factor_on_both_engines() -> None:
    estimate = PLAN.summary.estimated_seconds
    assert estimate
    default = choose(PLAN, real=False)
    assert default.factor == max(1.0, estimate / 300)
    kops = choose(PLAN, real=False, factor=40)
    assert (kops.time_scale, kops.bytes_divisor, kops.rate_divisor) == (MAX_TIME_SCALE, 4.0, 1.0)
    real = choose(PLAN, real=True, factor=40, real_rate=1024 * 1024)
    rate = min(b.throttle.rate for b in PLAN.batches if b.throttle.rate)
    assert real.time_scale == 1.0 and real.rate_divisor == pytest.approx(rate / (1024 * 1024))
    for s in (kops, real):  # bytes over the clone's rate, in clone seconds, times F: production's duration
        assert (1e9 / s.bytes_divisor) / (rate / s.rate_divisor) / s.time_scale * s.factor == pytest.approx(1e9 / rate)
    with pytest.raises(UsageError, match="no duration estimate"):
        choose(replace(PLAN, summary=replace(PLAN.summary, estimated_seconds=None)), real=False)


def test_a_clone_too_large_for_the_machine_runs_in_slow_motion_at_the_same_factor() -> None:
    assert machine_time_scale(6, 2) == machine_time_scale(24, 2) == 1.0
    slow = machine_time_scale(50, 2)
    assert 0.2 < slow < 0.25 and machine_time_scale(50, 9) == 1.0 and machine_time_scale(1, 1) == 1.0
    assert machine_time_scale(100, 2) < slow  # the work grows with every pair of brokers
    full, slowed = choose(PLAN, real=False, factor=4), choose(PLAN, real=False, factor=4, machine=slow)
    assert (full.time_scale, slowed.time_scale, slowed.factor) == (4.0, slow, 4)
    assert slowed.slow_motion and not full.slow_motion
    assert not choose(PLAN, real=False, factor=0.1, machine=slow).slow_motion  # F, not the machine, set it
    rate = min(b.throttle.rate for b in PLAN.batches if b.throttle.rate)
    for s in (full, slowed):  # a batch's clone wall seconds are the same: the bytes shrink with the clock
        assert (1e9 / s.bytes_divisor) / rate / s.time_scale == pytest.approx(1e9 / rate / 4)
    assert choose(PLAN, real=True, factor=4, machine=slow).time_scale == 1.0  # real Kafka keeps wall time


def test_the_clone_plan_is_a_valid_plan_file_for_the_clone() -> None:
    scaling = choose(PLAN, real=False, factor=20)
    clone = plan_format.loads(plan_format.dumps(clone_plan(PLAN, "clone-id", scaling)), "clone")
    assert clone.cluster_id == "clone-id" and clone.fingerprint["cluster_id"] == "clone-id"
    assert [m.tp for m in clone.moves] == [m.tp for m in PLAN.moves]
    assert clone.batches[0].estimate.seconds == pytest.approx(PLAN.batches[0].estimate.seconds / 20)
    assert clone.moves[0].bytes == round(PLAN.moves[0].bytes / scaling.bytes_divisor)


def events_for(durations: dict[int, float], stalled: int | None = None) -> Events:
    """Executor events of a run whose batches took `durations` clone seconds each."""
    batches = len(PLAN.batches)
    out: Events = [(0.0, Started("x", "apply", batches, "batches", len(PLAN.moves), 0))]
    t = 1.0
    for index, seconds in durations.items():
        out.append((t, BatchStarted(index, batches, 1, 0, None, False)))
        if stalled == index:
            out.append((t + 5, Stalled(index, "no progress for 20 s")))
            break
        t += seconds
        out.append((t, BatchDone(index, batches, seconds)))
    return out


def report_of(durations: dict[int, float], stalled: int | None = None, factor: float = 10.0) -> Report:
    scaling = choose(PLAN, real=False, factor=factor)
    events = events_for(durations, stalled)
    ends = {e.batch: t for t, e in events if isinstance(e, BatchDone)}
    seen = Observations({m.tp: ends[b.index] - 0.1 for b in PLAN.batches if b.index in ends for m in b.moves},
                        [(0.0, 1), (2.0, 0)])  # each move seen done just before its batch's end
    rows = batch_results(PLAN, scaling, events, seen)
    measured = None if any(r.measured_seconds is None for r in rows) else sum(r.measured_seconds or 0 for r in rows)
    return Report("prod", "kops", "all", scaling.as_dict(), "batches", rows, PLAN.summary.estimated_seconds, measured,
                  "batch 1 stalled" if stalled else None, 12.0, None, True, [], 3.0)


def test_the_verdict_and_exit_code_follow_the_measurements() -> None:
    exact = {b.index: (b.estimate.seconds or 0) / 10 + 0.1 for b in PLAN.batches}
    ok = report_of(exact)
    assert ok.exit_code == 0 and ok.verdict().startswith("OK: the plan's estimate of")
    slow = report_of({**exact, 2: (exact[2] - 0.1) * 2 + 0.1})
    assert slow.exit_code == 2 and "batch 2 +100%" in slow.verdict()
    coarse = {b.index: (b.estimate.seconds or 0) / 100 + 0.1 for b in PLAN.batches}
    short = report_of({**coarse, 2: (coarse[2] - 0.1) * 1.5 + 0.1}, factor=100)  # under a second on the clone
    assert not any(b.judged for b in short.batches) and short.exit_code == 0
    assert "shown, not judged; a smaller --scale judges them" in short.verdict()
    stalled = report_of(exact, stalled=1)
    assert stalled.exit_code == 3 and stalled.verdict().startswith("STOPPED: batch 1 stalled")
    assert ok.as_dict()["exit_code"] == 0 and ok.as_dict()["batches"][0]["error"] == pytest.approx(0.0, abs=1e-6)


def test_the_report_renders_a_timeline_and_tables() -> None:
    text = render_markdown(report_of({b.index: (b.estimate.seconds or 0) / 10 for b in PLAN.batches}))
    assert "```mermaid\ngantt" in text and "section Measured" in text and "| batch 1 |" in text
    assert text.index("**OK:") < text.index("```mermaid")


def test_under_replicated_seconds_count_each_sample_until_the_next() -> None:
    seen = Observations({}, [(0.0, 2), (1.0, 0), (3.0, 1)])
    assert seen.urp_seconds(0.0, 4.0) == pytest.approx(2 * 1 + 0 * 2 + 1 * 1)
    assert seen.urp_seconds(0.5, 3.5) == pytest.approx(2 * 0.5 + 1 * 0.5)


def test_mermaid_blocks_quote_their_labels() -> None:
    chart = bar_chart('bytes: "per" broker', ["1", "2"], "GiB", [("before", [1.5, 2.0]), ("after", [1.75, 1.75])])
    assert chart[0] == "```mermaid" and chart[-1] == "```" and 'title "bytes per broker"' in chart[2]
    assert "    bar [1.5, 2]" in chart and "    line [1.75, 1.75]" in chart
    timeline = gantt("t", [("Estimated", [("batch 1", 0.0, 59.6)])])
    assert "    batch 1 : s0b0, 0, 60" in timeline


def test_a_clone_that_keeps_getting_closer_is_waited_for_and_one_that_stops_is_not(monkeypatch) -> None:
    """A large clone on two cores settles slowly: the wait gives up only after READY_SECONDS without progress."""
    from kops.cli import rehearse

    now = [0.0]
    monkeypatch.setattr(rehearse.time, "monotonic", lambda: now[0])
    settling = rehearse._Settling()
    for step, remaining in enumerate(range(20_000, 0, -1_000)):  # closer every 150 s: never stuck
        now[0] = step * 150.0
        assert not settling.stuck(remaining)
    now[0] += rehearse.READY_SECONDS  # the same count for exactly the window: not yet
    assert not settling.stuck(1_000)
    now[0] += 1.0
    assert settling.stuck(1_000) and settling.stuck(5_000)  # worse is not closer
