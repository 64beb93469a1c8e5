"""Damaged copies of real files: whatever is changed (a value of another JSON type, a number out of range, a key
removed, a list emptied, the file cut short), kops answers with its own one-line error naming the location, or
reads a file it can act on safely. Never a traceback (issue: every file kops reads is checked whole)."""

from __future__ import annotations

import contextlib
import functools
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kops.cli.main import main
from kops.errors import KopsError
from kops.executor import record as records
from kops.executor import steps
from kops.model import plan_format, snapshot_format
from kops.planner.markdown import render_markdown
from kops.planner.planner import PlanningError
from kops.planner.planner import plan as make_plan
from kops.sizes.reader import read_sizes
from tests.builders import declare, td
from tests.examples import examples

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
PLANS = sorted(GOLDEN.glob("*/expected-plan.json"))
SNAPSHOTS = sorted(GOLDEN.glob("*/snapshot.json"))
SIZES = sorted(GOLDEN.glob("*/sizes.json"))
EXAMPLES = settings(max_examples=examples(1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
CLI_EXAMPLES = settings(max_examples=100, deadline=None,
                        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
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


def records_of_real_plans() -> list[bytes]:
    """Execution records as apply writes them: one per golden plan, mid-run (a batch done, one running)."""
    found = []
    for path in PLANS:
        plan = plan_format.loads(path.read_bytes(), str(path))
        record = records.ExecutionRecord("20261124T000000Z-abc-apply", "apply", "d" * 64, str(path), plan.cluster_id,
                                         1_763_950_000.0, {"host": "h", "user": "u", "pid": 7, "plan": str(path),
                                                           "execution": None, "started": 1_763_950_000.0},
                                         steps.from_plan(plan), 10_485_760)
        for batch, status in zip(record.batches, ("done", "running"), strict=False):
            batch.status, batch.started_at = status, 1_763_950_001.0
        record.throttles_before = {"topics/t": {"leader.replication.throttled.replicas": None}}
        record.throttles_written = {"topics/t": {"leader.replication.throttled.replicas": "0:1"}}
        found.append(records.dumps(record))
    return found


RECORDS = records_of_real_plans()


@functools.cache
def _original(chosen: Path | bytes) -> tuple[str, list[tuple[Any, ...]]]:
    """A file's text and its locations, read once (each example damages a fresh parse of the text)."""
    text = chosen.read_text() if isinstance(chosen, Path) else chosen.decode()
    lines = text.count("\n") > 1 and not text.lstrip().startswith("{\n")
    return text, [] if lines else paths_of(json.loads(text))


@st.composite
def mutated(draw: st.DrawFn, files: list[Path] | list[bytes]) -> bytes:
    chosen = draw(st.sampled_from(files))
    text, paths = _original(chosen)
    if text.count("\n") > 1 and not text.lstrip().startswith("{\n"):  # JSON lines: damage one row
        return _damaged_row(draw, text)
    doc = json.loads(text)
    how = draw(st.sampled_from(["replace", "remove", "empty", "truncate"]))
    if how == "truncate":
        return text.encode()[: draw(st.integers(0, len(text) - 1))]
    where = draw(st.sampled_from(paths))
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


def _damaged_row(draw: st.DrawFn, text: str) -> bytes:
    lines = text.splitlines()
    index = draw(st.integers(0, len(lines) - 1))
    row = draw(mutated([lines[index].encode()]))
    return "\n".join([*lines[:index], row.decode("utf-8", "replace"), *lines[index + 1:]]).encode()


def test_there_are_real_files_to_damage() -> None:
    assert len(PLANS) >= 5 and len(SNAPSHOTS) >= 5 and len(SIZES) >= 5 and len(RECORDS) >= 5


@EXAMPLES
@given(mutated(PLANS))
def test_a_damaged_plan_is_one_line_or_a_plan_kops_can_act_on(data: bytes) -> None:
    try:
        plan = plan_format.loads(data, "plan.json", accept_edited=True)  # past the seal: the checks themselves
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


@EXAMPLES
@given(mutated(RECORDS))
def test_a_damaged_execution_record_is_one_line_or_a_record_kops_can_resume(data: bytes) -> None:
    try:
        record = records.loads(data, "/kops/executions/x")
    except KopsError as exc:
        assert "/kops/executions/x" in exc.one_line() and "\n" not in exc.one_line()
        return
    assert records.loads(records.dumps(record), "again") == record
    assert all(m.partition >= 0 and min(m.from_replicas + m.to_replicas) >= 0 for b in record.batches for m in b.moves)
    assert record.rate is None or record.rate > 0


@EXAMPLES
@given(mutated(SIZES))
def test_a_damaged_sizes_summary_is_one_line_naming_the_row_or_sizes_kops_can_use(
        tmp_path_factory, data: bytes) -> None:
    path = _damaged_file(tmp_path_factory, "sizes", "part-0.json", data)
    try:
        sizes = read_sizes(path)
    except KopsError as exc:
        assert str(path) in exc.one_line() and "\n" not in exc.one_line()
        return
    assert all(tp.partition >= 0 and n >= 0 for tp, n in sizes.bytes.items())


@CLI_EXAMPLES
@given(data=mutated(PLANS))
def test_kops_apply_dry_run_on_a_damaged_plan_exits_1_with_one_line(tmp_path_factory, capsys, data: bytes) -> None:
    assume(_refused(lambda d, w: plan_format.loads(d, w, accept_edited=True), data))
    path = _damaged_file(tmp_path_factory, "cli-plan", "plan.json", data)
    assert main(["apply", "--dry-run", "--accept-edited-plan", str(path), "-z", "127.0.0.1:1"]) == 1
    _one_line(capsys, path)


@CLI_EXAMPLES
@given(data=mutated(SNAPSHOTS))
def test_kops_plan_on_a_damaged_snapshot_exits_1_with_one_line(tmp_path_factory, capsys, data: bytes) -> None:
    assume(_refused(snapshot_format.loads, data))
    path = _damaged_file(tmp_path_factory, "cli-snapshot", "snapshot.json", data)
    golden = GOLDEN / "decommission"
    assert main(["plan", str(golden / "playbook.yml"), "-i", str(golden / "inventory.yml"),
                 "--snapshot", str(path)]) == 1
    _one_line(capsys, path)


@CLI_EXAMPLES
@given(data=mutated(SIZES))
def test_kops_sizes_show_on_a_damaged_summary_exits_1_with_one_line(tmp_path_factory, capsys, data: bytes) -> None:
    path = _damaged_file(tmp_path_factory, "cli-sizes", "sizes.json", data)
    assume(_refused(lambda _data, _where: read_sizes(path), data))
    assert main(["sizes", "show", str(path)]) == 1
    _one_line(capsys, path)


def _damaged_file(factory: Any, test: str, name: str, data: bytes) -> Path:
    """`data` as a new file at the same path for each example of a test. One folder per test, not per example:
    thousands of folders cost their making and a later run's clean-up; and a new file, not one rewritten in
    place, which ext4 flushes when it is closed (auto_da_alloc: 3 ms each)."""
    folder = factory.getbasetemp() / f"damaged-{test}"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.unlink(missing_ok=True)
    path.write_bytes(data)
    return path


def _refused(load: Any, data: bytes) -> bool:
    try:
        load(data, "x")
    except KopsError:
        return True
    return False


def _one_line(capsys: Any, path: Path) -> None:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and "Traceback" not in err, err
