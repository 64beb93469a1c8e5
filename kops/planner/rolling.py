"""Rolling execution's order and admission: which moves to submit while others are in flight.

A move works its destination brokers (they copy) and its source, the partition's leader (it serves the copy):
those are the brokers it "touches". At most `max_moves_per_broker` moves in flight may touch any broker, and
at most `max_moves` be in flight in all. The order is largest and most constrained first: moves through the
busiest port (the broker with the most bytes to send or receive) come first, largest first among them, so the
port that bounds the makespan never idles while smaller work waits elsewhere (longest-processing-time first on
the critical port, as Cruise Control's and Redpanda's per-broker concurrency caps do it). Given each broker's
room (`planned_room`: the plan's limits less what is on the broker and on its way, for its disk, its network in
(a move carries its partition's write rate where the plan knew it) and its replica cap), a move starts only where
its destinations have room for it then, beside the moves in flight.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

from kops.model.plan import CapacityReport, Move, Rolling
from kops.model.snapshot import Snapshot

Source = Callable[[Move], int | None]  # a move's current leader (None: unknown, the first original replica)
Room = Callable[[int], float | None]  # how much more a broker may take now (None: unknown, not checked)
Rooms = Mapping[str, Room]  # per resource the plan knows a limit of (disk, network in: bytes, bytes/s; replicas)
# what one new replica of a move brings its destination, per resource rolling holds to the plan's limits
BROUGHT: Mapping[str, Callable[[Move], float]] = {"disk": lambda m: float(m.bytes), "replicas": lambda m: 1.0,
                                                  "network_in": lambda m: m.write_rate or 0.0}


def leader_of(snapshot: Snapshot) -> Source:
    """Each move's source as the snapshot has it: the partition's current leader."""
    def leader(move: Move) -> int | None:
        part = snapshot.partition(move.tp)
        state = None if part is None else part.state
        return state.leader if state is not None and state.leader >= 0 else None
    return leader


def touched(move: Move, source: Source) -> frozenset[int]:
    """The brokers a move works: its new replicas and the leader they copy from (none for a reorder)."""
    if not move.adding:
        return frozenset()
    leader = source(move)
    return frozenset(move.adding) | {leader if leader is not None else move.from_replicas[0]}


def port_loads(moves: Iterable[Move], source: Source) -> Counter[int]:
    """Bytes each broker sends or receives over all `moves`."""
    load: Counter[int] = Counter()
    for m in moves:
        for broker in touched(m, source):
            load[broker] += m.copied_bytes
    return load


def rolling_order(moves: Sequence[Move], source: Source) -> list[Move]:
    """Busiest port first, then largest; ties by topic and partition (deterministic)."""
    load = port_loads(moves, source)
    def key(m: Move) -> tuple[int, int, str, int]:
        busiest = max((load[b] for b in touched(m, source)), default=0)
        return (-busiest, -m.copied_bytes, m.topic, m.partition)
    return sorted(moves, key=key)


def admissible(pending: Iterable[Move], in_flight: Iterable[Move], limits: Rolling, source: Source,
               room: Rooms | None = None) -> list[Move]:
    """The moves of `pending` (in their order) that may start now beside `in_flight` within `limits`, and, given
    `room`, whose destinations have room now, per resource, for their new copies beside those chosen before."""
    per_broker: Counter[int] = Counter()
    running = 0
    for m in in_flight:
        running += 1
        per_broker.update(touched(m, source))
    chosen: list[Move] = []
    taking: dict[str, Counter[int]] = {resource: Counter() for resource in room or {}}  # what the chosen bring
    for m in pending:
        if limits.max_moves is not None and running >= limits.max_moves:
            break
        brokers = touched(m, source)
        if any(per_broker[b] >= limits.max_moves_per_broker for b in brokers):
            continue
        if room is not None and short_of(m, room, taking) is not None:
            continue
        chosen.append(m)
        running += 1
        per_broker.update(brokers)
        for resource, took in taking.items():
            took.update({b: BROUGHT[resource](m) for b in m.adding})
    return chosen


def short_of(move: Move, room: Rooms, taking: Mapping[str, Counter[int]] | None = None
             ) -> tuple[str, int, float] | None:
    """The first resource and destination of `move` without room for its new copy (beside what `taking` already
    brings it): (resource, broker, the room left), or None where every destination has room."""
    for resource, left in room.items():
        amount = BROUGHT[resource](move)
        for b in move.adding:
            free = left(b)
            if free is not None and (taking[resource][b] if taking else 0) + amount > free:
                return resource, b, free
    return None


def planned_room(report: CapacityReport | None, done: Iterable[Move], in_flight: Iterable[Move]) -> Rooms | None:
    """The room the plan's own figures leave each broker now, per resource (docs/design/capacity.md §6.7): its
    limit (or where it started, when it started over) less what it held before the plan, what the moves done
    brought and took away, and the new copies of the moves in flight (whole until they finish). A broker without
    a known limit has no planned room (None). Deletions the plan makes first are not counted: the safe side. None
    without a report or a limit of these resources: nothing is checked."""
    if report is None:
        return None
    done, in_flight = list(done), list(in_flight)
    rooms = {resource: room for resource in BROUGHT
             if (room := _room_of(report, resource, done, in_flight)) is not None}
    return rooms or None


def _room_of(report: CapacityReport, resource: str, done: list[Move], in_flight: list[Move]) -> Room | None:
    held = {b: float(u[resource].before) for b, u in report.brokers.items() if resource in u}
    cap = {b: float(max(u[resource].limit, u[resource].before)) for b, u in report.brokers.items() if resource in u}
    if not cap:
        return None
    amount = BROUGHT[resource]
    for m in done:
        for b in m.adding:
            held[b] = held.get(b, 0.0) + amount(m)
        for b in m.removing:
            held[b] = held.get(b, 0.0) - amount(m)
    for m in in_flight:
        for b in m.adding:
            held[b] = held.get(b, 0.0) + amount(m)

    def room(broker: int) -> float | None:
        return cap[broker] - held.get(broker, 0.0) if broker in cap else None
    return room
