"""Damaged copies of real files: whatever is changed (a value of another JSON type, a number out of range, a key
removed, a list emptied, the file cut short), kops answers with its own one-line error naming the location, or
reads a file it can act on safely. Never a traceback (issue: every file kops reads is checked whole)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kops.errors import KopsError
from kops.executor import steps
from kops.model import plan_format, snapshot_format
from kops.planner.markdown import render_markdown
from kops.planner.planner import PlanningError
from kops.planner.planner import plan as make_plan
from tests.clusters import declare, td

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
PLANS = sorted(GOLDEN.glob("*/expected-plan.json"))
SNAPSHOTS = sorted(GOLDEN.glob("*/snapshot.json"))
EXAMPLES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
REPLACEMENTS = [None, True, False, 0, -1, 1.5, -(2**70), 2**70, "", "x", [], {}, [1, 2], {"a": 1}]


def paths_of(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every location in a JSON document (keys of objects, indexes of lists)."""
    found = [prefix] if prefix else []
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += paths_of(value, prefix + (key,))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            found += paths_of(value, prefix + (index,))
    return found


@st.composite
def mutated(draw: st.DrawFn, files: list[Path]) -> bytes:
    text = draw(st.sampled_from(files)).read_text()
    doc = json.loads(text)
    how = draw(st.sampled_from(["replace", "remove", "empty", "truncate"]))
    if how == "truncate":
        return text.encode()[: draw(st.integers(0, len(text) - 1))]
    where = draw(st.sampled_from(paths_of(doc)))
    parent = doc
    for step in where[:-1]:
        parent = parent[step]
    last = where[-1]
    if how == "remove":
        del parent[last]
    elif how == "empty" and isinstance(parent[last], (list, dict)):
        parent[last] = type(parent[last])()
    else:
        parent[last] = draw(st.sampled_from(REPLACEMENTS))
    return json.dumps(doc).encode()


def test_there_are_real_files_to_damage() -> None:
    assert len(PLANS) >= 5 and len(SNAPSHOTS) >= 5


@EXAMPLES
@given(mutated(PLANS))
def test_a_damaged_plan_is_one_line_or_a_plan_kops_can_act_on(data: bytes) -> None:
    try:
        plan = plan_format.loads(data, "plan.json")
    except KopsError as exc:
        assert "plan.json" in exc.one_line() and "\n" not in exc.one_line()
        return
    # what apply, rollback and the renderers do with a plan they accepted
    render_markdown(plan)
    steps.from_plan(plan)
    assert all(m.partition >= 0 and all(b >= 0 for b in m.to_replicas + m.from_replicas) for m in plan.moves)
    assert all(b.throttle.rate is None or b.throttle.rate > 0 for b in plan.batches)


@EXAMPLES
@given(mutated(SNAPSHOTS))
def test_a_damaged_snapshot_is_one_line_or_a_snapshot_kops_can_plan_from(data: bytes) -> None:
    try:
        snapshot = snapshot_format.loads(data, "snapshot.json")
    except KopsError as exc:
        assert "snapshot.json" in exc.one_line() and "\n" not in exc.one_line()
        return
    names = sorted(snapshot.topics)[:2]
    with contextlib.suppress(PlanningError):
        make_plan(declare(*(td(n, rf=1) for n in names), decommission=[]), snapshot)
