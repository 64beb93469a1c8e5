"""Rolling execution's pure parts: the order, the caps, the playbook keys, the plan and record files."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from kops.executor import record as record_format
from kops.executor import steps
from kops.executor.record import ExecutionRecord
from kops.model import plan_format, snapshot_format
from kops.model.plan import CapacityReport, Move, Rolling, Usage
from kops.planner.rolling import admissible, planned_room, rolling_order, short_of, touched
from tests.examples import examples
from tests.unit.test_declare_playbooks import load, messages


def source(move: Move) -> int:
    return move.from_replicas[0]


def permutation(index: int, items: list[int]) -> list[int]:
    """The `index`-th ordering of `items` (its Lehmer code): one draw where st.permutations takes one per item."""
    items, found = list(items), []
    for n in range(len(items), 0, -1):
        index, position = divmod(index, n)
        found.append(items.pop(position))
    return found


@st.composite
def moves(draw):
    count = draw(st.integers(1, 30))
    found = []
    for n in range(count):
        brokers = permutation(draw(st.integers(0, math.factorial(8) - 1)), list(range(1, 9)))
        rf = draw(st.integers(1, 3))
        keep = draw(st.integers(0, rf - 1))
        origin = tuple(brokers[:rf])
        target = origin[:keep] + tuple(brokers[rf:rf + rf - keep])
        found.append(Move("t", n, origin, target, draw(st.integers(0, 10**9))))
    return found


@settings(max_examples=examples(300), deadline=None)
@given(moves(), st.integers(1, 4), st.one_of(st.none(), st.integers(1, 10)), st.data())
def test_admission_never_exceeds_the_caps(found, per_broker, total, data) -> None:
    limits = Rolling(per_broker, total)
    ordered = rolling_order(found, source)
    in_flight: list[Move] = []
    pending = list(ordered)
    while pending:
        chosen = admissible(pending, in_flight, limits, source)
        in_flight += chosen
        load = Counter(b for m in in_flight for b in touched(m, source))
        assert all(n <= per_broker for n in load.values()), load
        assert total is None or len(in_flight) <= total
        assert in_flight, "nothing in flight and nothing admitted: the run would never end"
        pending = [m for m in pending if m not in chosen]
        finishing = data.draw(st.integers(1, 2 ** len(in_flight) - 1))  # which end now: any but none, one draw
        finished = [m for i, m in enumerate(in_flight) if finishing >> i & 1]
        in_flight = [m for m in in_flight if m not in finished]


def test_order_is_busiest_port_first_then_largest() -> None:
    busy = [Move("a", p, (1, 2), (1, 3), 100) for p in range(3)]  # leader 1 and broker 3 carry 300 each
    big_elsewhere = Move("b", 0, (4, 5), (4, 6), 250)
    small_elsewhere = Move("b", 1, (4, 5), (4, 7), 10)
    ordered = rolling_order([small_elsewhere, big_elsewhere, *busy], source)
    assert ordered[:3] == busy and ordered[3:] == [big_elsewhere, small_elsewhere]


def test_admission_fills_every_free_broker() -> None:
    """One move per broker at a time: the first of each broker pair goes, later ones on busy brokers wait."""
    found = [Move("t", 0, (1,), (2,), 5), Move("t", 1, (1,), (3,), 4), Move("t", 2, (4,), (5,), 3)]
    assert admissible(found, [], Rolling(1), source) == [found[0], found[2]]
    assert admissible(found[1:], [found[0]], Rolling(2, 2), source) == [found[1]]
    reorder = Move("t", 3, (1, 2), (2, 1), 0)  # no data: touches nothing, counts toward the total only
    assert touched(reorder, source) == frozenset()
    assert admissible([reorder], found, Rolling(1, 4), source) == [reorder]


def test_a_move_starts_only_where_its_destination_has_room_now() -> None:
    """Broker 3 has 250 bytes of room: two 100-byte moves to it start, the third waits, a move elsewhere goes."""
    to_3 = [Move("t", p, (1,), (3,), 100) for p in range(3)]
    elsewhere = Move("u", 0, (1,), (4,), 500)
    room = {"disk": {3: 250.0}.get}
    assert admissible([*to_3, elsewhere], [], Rolling(5), source, room) == [to_3[0], to_3[1], elsewhere]
    assert admissible([*to_3, elsewhere], [], Rolling(5), source) == [*to_3, elsewhere]


def test_the_planned_room_is_the_limit_less_what_is_held_done_and_in_flight() -> None:
    """Broker 3 (limit 1,000, 600 held before the plan): a move done brought it 200 and one took 100 away, a move
    in flight brings 150 more: 150 left. Broker 2 started over (1,200 of a 1,000 limit): room to its start."""
    report = CapacityReport({"disk": 0.8}, {
        3: {"disk": Usage(1_250, 1_000, "declared inv.yml:1", 600, 700, 700)},
        2: {"disk": Usage(1_250, 1_000, "declared inv.yml:1", 1_200, 900, 1_200)}})
    done = [Move("t", 0, (1,), (3,), 200), Move("t", 1, (3,), (2,), 100)]
    rooms = planned_room(report, done, [Move("t", 2, (1,), (3,), 150)])
    assert rooms is not None and set(rooms) == {"disk"}
    room = rooms["disk"]
    assert (room(3), room(2), room(4)) == (150.0, -100.0, None)
    assert planned_room(None, done, []) is None
    assert planned_room(CapacityReport({"disk": 0.8}, {}), done, []) is None


def test_a_replica_cap_holds_at_every_wave_as_the_disk_does() -> None:
    """Broker 3 may hold 5 replicas and holds 3: one move done brought it one, one in flight another; of three
    ready moves to it none fits, broker 4 (no cap) takes its move. A rolling wave holds moves of several batches,
    whose peaks the plan checked batch by batch only."""
    report = CapacityReport({"disk": 0.8}, {3: {"replicas": Usage(5, 5, "declared inv.yml:2", 3, 5, 5)}})
    done = [Move("t", 0, (1,), (3,), 10)]
    rooms = planned_room(report, done, [Move("t", 1, (1,), (3,), 10)])
    assert rooms is not None and set(rooms) == {"replicas"} and rooms["replicas"](3) == 0.0
    ready = [Move("u", p, (1,), (3,), 10) for p in range(3)] + [Move("v", 0, (1,), (4,), 10)]
    assert admissible(ready, [], Rolling(5), source, rooms) == [ready[3]]
    assert short_of(ready[0], rooms) == ("replicas", 3, 0.0)


def test_network_in_holds_at_every_wave_with_the_moves_write_rates() -> None:
    """Broker 3 takes in 800 B/s of a 1,000 B/s limit: of two ready moves writing 150 B/s each, one fits; a move
    without a known rate (a plan made without write rates) brings none."""
    report = CapacityReport({"network_in": 0.8}, {3: {"network_in": Usage(1_250, 1_000, "declared inv.yml:3", 800,
                                                                          800, 800)}})
    rooms = planned_room(report, [], [])
    assert rooms is not None and set(rooms) == {"network_in"} and rooms["network_in"](3) == 200.0
    ready = [Move("t", p, (1,), (3,), 10, write_rate=150.0) for p in range(2)] + [Move("u", 0, (1,), (3,), 10)]
    assert admissible(ready, [], Rolling(5), source, rooms) == [ready[0], ready[2]]
    assert short_of(ready[1], rooms, {"network_in": Counter({3: 150.0})}) == ("network_in", 3, 200.0)


def test_playbook_mode_rolling(tmp_path: Path) -> None:
    decl = load(tmp_path, """
        - hosts: prod
          topics: [{name: a}]
          execution: {mode: rolling, max_moves_per_broker: 3, max_moves: 12}
    """)
    assert decl.ok, messages(decl)
    assert decl.desired["prod"].execution.rolling == Rolling(3, 12)
    bad = load(tmp_path, """
        - hosts: prod
          topics: [{name: a}]
          execution: {mode: waves, max_moves: 0}
        - hosts: dev
          topics: [{name: a}]
          execution: {max_moves_per_broker: 2}
    """)
    found = messages(bad)
    for text in ("execution.mode must be one of batches, rolling", "execution.max_moves must be at least 1",
                 "execution.max_moves_per_broker applies to rolling execution only"):
        assert any(text in m for m in found), (text, found)


def test_plan_and_record_carry_rolling_through_their_files() -> None:
    golden = Path(__file__).parents[1] / "golden" / "decommission"
    plan = plan_format.loads((golden / "expected-plan.json").read_bytes(), "expected-plan.json")
    assert plan.moves and plan.rolling is None
    rolled = plan_format.loads(plan_format.dumps(replace(plan, rolling=Rolling(3, 7))), "rolled")
    assert rolled.rolling == Rolling(3, 7) and rolled.moves == plan.moves
    snap = snapshot_format.loads((golden / "snapshot.json").read_bytes(), "snapshot.json")
    batches = steps.rolling_from_plan(rolled, snap)
    assert sorted(m for b in batches for m in b.moves) == sorted(plan.moves) and all(len(b.moves) == 1 for b in batches)
    record = ExecutionRecord("x", "apply", "d", "p", None, 1.0, {}, batches, rolling=Rolling(3, None))
    again = record_format.loads(record_format.dumps(record), "record")
    def rows(found: list) -> list:
        return [(m.tp, m.from_replicas, m.to_replicas, m.bytes) for b in found for m in b.moves]
    assert again.rolling == Rolling(3, None) and rows(again.batches) == rows(batches)
