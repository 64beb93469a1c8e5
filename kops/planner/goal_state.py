"""The optimizer's working copy of an assignment: every load the goals read, kept current action by action.

An action is a replica move (the replica on one broker goes to another, in its position, so a moved leader's
leadership goes with it) or a leadership change (a replica becomes first; the plan elects it). Each costs O(RF) plus
a bisection into the two brokers' sorted lists; the optimizer judges an action before making it
(kops/planner/trial.py), so it makes only those it takes. Leadership is the first replica's: the plan elects
preferred leaders where it changes them (docs/design/goals.md §1, §3).
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace

from kops.bulk import ascending
from kops.model.capacity import RESOURCES, Capacities
from kops.model.partitions import KOPS_TOPIC, TopicPartition, keys_of
from kops.model.snapshot import Snapshot
from kops.planner.goal_values import Assignment, GoalInputs, Measured, topic_figure

REPLICA_LOADS = ("disk", "network_in", "replicas")  # carried by every replica
LEADER_LOADS = ("leaders", "leader_bytes_in", "network_out")  # carried by the leader
LOADS = REPLICA_LOADS + LEADER_LOADS
Ranked = list[tuple[float, TopicPartition]]


class GoalState:
    """`limits`: per resource (disk, network_in, network_out, replicas) and broker, the most it may hold; a broker
    or resource missing is unlimited. A broker already over a limit may take nothing more of it."""

    def __init__(self, assignment: Assignment, inputs: GoalInputs,
                 limits: Mapping[str, Mapping[int, float]] | None = None) -> None:
        self.inputs = inputs
        self.brokers: tuple[int, ...] = tuple(sorted(inputs.racks))
        self.racks = inputs.racks
        self.limits = limits or {}
        self.replicas: dict[TopicPartition, tuple[int, ...]] = dict(filter(  # the placed ones, in C
            operator.itemgetter(1), zip(assignment, map(tuple, assignment.values()))))
        self.value: dict[str, dict[TopicPartition, float]] = {  # read in C: a million partitions each
            "disk": dict(zip(self.replicas, map(float, map(inputs.sizes.get, self.replicas, itertools.repeat(0))))),
            "network_in": dict(zip(self.replicas, map(float, map(inputs.write.get, self.replicas,
                                                                 itertools.repeat(0.0))))),
        }
        self.value["network_out"] = _out_loads(self.replicas, self.value["network_in"].values(), inputs)
        self.value["leader_bytes_in"] = self.value["network_in"]
        self.weight = self._weights()
        # loads of brokers outside `brokers` too (a replica on an absent broker): counted, never a destination
        every = sorted(set(self.brokers).union(*self.replicas.values()))
        self.load: dict[str, dict[int, float]] = {name: dict.fromkeys(every, 0.0) for name in LOADS}
        self.topic: dict[str, Counter[int]] = defaultdict(Counter)
        self.every = every
        # per broker, the partitions it follows by their leader: built when first read (`follows`), then kept
        self._follows: dict[int, defaultdict[int, set[TopicPartition]]] | None = None
        self._ranked: dict[tuple[str, int], Ranked] = {}
        # per built list, the entries added (True) and removed (False) since it was last read, in order (`ranked`)
        self._pending: dict[tuple[str, int], list[tuple[bool, tuple[float, TopicPartition]]]] = {}
        # the names whose lists are built (every broker's at once, `_rank_all`), with what orders each (`_ranks`)
        self._built: dict[str, Mapping[TopicPartition, float]] = {}
        self.touched: set[int] = set()  # brokers whose loads changed since the optimizer last looked (it clears it)
        self._factors: dict[str, Counter[int]] | None = None
        # per utilization goal, its band's fair shares and slack floor: constant through a walk (kops/planner/bands.py)
        self.band_constants: dict[str, tuple[dict[int, float], float]] = {}
        # partitions no action may change (kops plan's; callers add theirs): kops's own topic always, which the first
        # apply creates and where the run's lease lives (a rebalance had moved it right after that apply)
        self.pinned: frozenset[TopicPartition] = frozenset(self._load_all())

    def _load_all(self) -> list[TopicPartition]:
        """Every replica's and leadership's load, in one pass (what `_shift` and `_hand` do one at a time, with
        no sorted list built yet to keep current): a million partitions' state in seconds, not tens of them. The
        value maps are read alongside the replicas (they hold the replicas' keys, in their order) and each topic's
        counts per broker are counted in C. Returns kops's own partitions."""
        value, load, topic = self.value, self.load, self.topic
        on_disk, rate_in, count = load["disk"], load["network_in"], load["replicas"]
        leaders, leader_in, sent = load["leaders"], load["leader_bytes_in"], load["network_out"]
        for replicas, size, written, out in zip(self.replicas.values(), value["disk"].values(),
                                                value["network_in"].values(), value["network_out"].values()):
            for b in replicas:
                on_disk[b] += size
                rate_in[b] += written
            first = replicas[0]
            leaders[first] += 1
            leader_in[first] += written
            sent[first] += out
        for name, partitions in itertools.groupby(self.replicas, key=operator.itemgetter(0)):
            topic[name].update(itertools.chain.from_iterable(map(self.replicas.__getitem__, partitions)))
        for b, n in Counter(itertools.chain.from_iterable(self.replicas.values())).items():
            count[b] += n  # whole numbers in floats: the same sums in any order
        return [tp for tp in self.replicas if tp[0] == KOPS_TOPIC] if KOPS_TOPIC in topic else []

    @property
    def follows(self) -> dict[int, defaultdict[int, set[TopicPartition]]]:
        """Per broker, the partitions it follows, by their leader (in no particular order): a leadership pull's
        candidates leader by leader, where scanning each puller's thousands of replicas for their leaders took a
        million-partition walk 6 s."""
        if self._follows is None:
            found: dict[int, defaultdict[int, set[TopicPartition]]] = {b: defaultdict(set) for b in self.every}
            for tp, replicas in self.replicas.items():
                leader = replicas[0]
                for b in replicas[1:]:
                    found[b][leader].add(tp)
            self._follows = found
        return self._follows

    def _refollow(self, tp: TopicPartition, replicas: tuple[int, ...], now: tuple[int, ...]) -> None:
        """`follows` kept as `tp`'s replicas go from `replicas` to `now` (a move or a leadership change)."""
        follows, was, leader = self._follows, replicas[0], now[0]
        assert follows is not None
        for b in replicas[1:]:
            follows[b][was].remove(tp)
        for b in now[1:]:
            follows[b][leader].add(tp)

    def measured(self) -> Measured:
        """The per-broker loads and topic figure the goal table reads, as the state stands (copied: a walk goes on
        changing them), instead of summing every replica of the assignment again."""
        held = {name: dict(self.load[name]) for name in ("disk", "network_in", "network_out", "replicas", "leaders")}
        held["leader_in"] = dict(self.load["leader_bytes_in"])
        if self._factors is None:
            self._factors = defaultdict(Counter)
            for tp, replicas in self.replicas.items():  # no action changes a replication factor
                self._factors[tp.topic][len(replicas)] += 1
        return held, topic_figure(self.topic, self._factors, self.inputs)

    def per(self, name: str, tp: TopicPartition) -> float:
        """What one replica (or, for leader loads, the leadership) of `tp` adds to a broker's `name` load."""
        return 1.0 if name in ("replicas", "leaders") else self.value[name][tp]

    def ranked(self, name: str, broker: int) -> Ranked:
        """The broker's replicas (leader loads: the partitions it leads) by their `name` value, then bytes, then
        partition: the candidates a goal bisects. Built for every broker at once, then kept sorted as actions change
        the brokers."""
        key = (name, broker)
        found = self._ranked.get(key)
        if found is None:
            self._rank_all(name)
            found = self._ranked[key]
        elif key in self._pending:
            found = self._ranked[key] = _caught_up(found, self._pending.pop(key))
        return found

    def _rank_all(self, name: str) -> None:
        """Every broker's list for `name`, dealt out of one sort of every partition (each broker's list comes out
        sorted, and a partition's entry is shared by its brokers): a million-partition walk sorted a thousand
        brokers' lists one by one, each with its own ties to break."""
        ranks = self._ranks(name)
        lists: dict[int, Ranked] = {b: [] for b in self.every}
        entries, holders = _by_value(ranks, self.replicas)
        if name in LEADER_LOADS:
            for entry, replicas in zip(entries, holders):
                lists[replicas[0]].append(entry)
        else:
            for entry, replicas in zip(entries, holders):
                for b in replicas:
                    lists[b].append(entry)
        for b, found in lists.items():
            self._ranked[(name, b)] = found
        self._built[name] = ranks

    def _weights(self) -> dict[TopicPartition, float]:
        """How heavy a replica is for every load at once: its largest value over the mean of that value. A count
        goal moves the lightest first, so evening counts disturbs the bytes and rates above it least."""
        means = {n: sum(v.values()) / len(v) for n, v in self.value.items()
                 if v and any(v.values()) and n != "leader_bytes_in"}  # network_in's own values: the same ratios
        if not means:
            return dict.fromkeys(self.replicas, 0.0)
        # values are never negative: the largest ratio, or 0; every value map has the replicas' keys, in their order
        ratios = [map(operator.truediv, self.value[name].values(), itertools.repeat(mean))
                  for name, mean in means.items()]
        return dict(zip(self.replicas, map(max, itertools.repeat(0.0), *ratios)))

    def _ranks(self, name: str) -> Mapping[TopicPartition, float]:
        """What orders a broker's list for `name`: a count goal's lightest replica overall first (`weight`), else
        the value itself."""
        return self.weight if name in ("replicas", "leaders") else self.value[name]

    def _hand(self, tp: TopicPartition, old: int, new: int) -> None:
        """The leadership's loads (and lists) off `old` and onto `new`."""
        value = self.value
        self._carry(LEADER_LOADS, (1.0, value["network_in"][tp], value["network_out"][tp]), tp, old, new)

    def _carry(self, names: tuple[str, ...], amounts: tuple[float, ...], tp: TopicPartition, source: int,
               dest: int) -> None:
        """`amounts` of the loads `names` off `source` and onto `dest`, with `tp` in their built lists."""
        load = self.load
        self.touched.add(source)
        self.touched.add(dest)
        for name, amount in zip(names, amounts, strict=True):
            per = load[name]
            per[source] -= amount
            per[dest] += amount
        self._note(names, tp, source, dest)

    def _note(self, names: tuple[str, ...], tp: TopicPartition, source: int, dest: int) -> None:
        """`tp` leaves `source`'s built lists of `names` and joins `dest`'s, laid over when a list is next read
        (`ranked`): most lists a walk changes are not read until many changes later (a disk pass never reads
        network in's, a destination's list is read once it sheds), and one sort of a list with a few thousand
        changes beats as many sorted inserts."""
        built, pending = self._built, self._pending
        for name in names:
            ranks = built.get(name)
            if ranks is not None:
                entry = (ranks[tp], tp)
                pending.setdefault((name, source), []).append((False, entry))
                pending.setdefault((name, dest), []).append((True, entry))

    def move(self, tp: TopicPartition, source: int, dest: int) -> None:
        """The replica on `source` goes to `dest`, in its position (a leader's leadership with it)."""
        replicas = self.replicas[tp]
        self.replicas[tp] = now = tuple(dest if b == source else b for b in replicas)
        if self._follows is not None:
            self._refollow(tp, replicas, now)
        self._shift(tp, source, dest)
        if replicas[0] == source:
            self._hand(tp, source, dest)

    def _shift(self, tp: TopicPartition, source: int, dest: int) -> None:
        """The replica's loads, counts and lists off `source` and onto `dest`: a walk's most frequent step."""
        value = self.value
        per_topic = self.topic[tp[0]]
        per_topic[source] -= 1
        per_topic[dest] += 1
        self._carry(REPLICA_LOADS, (value["disk"][tp], value["network_in"][tp], 1.0), tp, source, dest)

    def lead(self, tp: TopicPartition, broker: int) -> int:
        """`broker` (a replica) leads `tp`: it goes first, the others keep their order. Returns the old leader."""
        replicas = self.replicas[tp]
        old = replicas[0]
        self.replicas[tp] = now = (broker, *(b for b in replicas if b != broker))
        if self._follows is not None:
            self._refollow(tp, replicas, now)
        self._hand(tp, old, broker)
        return old

    def rack_ok(self, tp: TopicPartition, source: int, dest: int) -> bool:
        """Racks stay distinct where they were: `dest`'s rack is not among the other replicas' (kops's rule)."""
        return _rack_open(self.racks.get(dest), *self._racks_around(tp, source))

    def _racks_around(self, tp: TopicPartition, source: int) -> tuple[str | None, set[str | None]]:
        """The source's rack and those of the partition's other replicas: what `_rack_open` reads."""
        racks = self.racks
        return racks.get(source), {racks.get(b) for b in self.replicas[tp] if b != source}

    def _within(self, resource: str, broker: int, extra: float) -> bool:
        limit = self.limits.get(resource, {}).get(broker)
        return limit is None or extra <= 0 or self.load[resource][broker] + extra <= limit

    def fits(self, tp: TopicPartition, source: int, dest: int) -> bool:
        """May the replica on `source` go to `dest`: not already a replica, racks kept, every limit of `dest` kept."""
        if dest in self.replicas[tp] or tp in self.pinned or not self.rack_ok(tp, source, dest):
            return False
        return self.within_limits(tp, source, dest)

    def within_limits(self, tp: TopicPartition, source: int, dest: int) -> bool:
        """`fits`'s limits alone: for a destination `open_to` gave, whose replicas, pins and racks it read."""
        value, load, limits = self.value, self.load, self.limits
        out = value["network_out"][tp] if self.replicas[tp][0] == source else 0.0
        for resource, extra in (("disk", value["disk"][tp]), ("network_in", value["network_in"][tp]),
                                ("replicas", 1.0), ("network_out", out)):  # `_within` of each, inlined
            limit = limits[resource].get(dest) if resource in limits else None
            if limit is not None and extra > 0 and load[resource][dest] + extra > limit:
                return False
        return True

    def open_to(self, tp: TopicPartition, source: int, ranked: Iterable[int], n: int) -> Iterator[int]:
        """The first `n` of `ranked` that the replica on `source` may go to by replicas, pins and racks (`free`),
        lazily (a shed usually takes the first), with the partition's racks read once (a million-partition walk
        asked `free` four million times, each reading every replica's rack again)."""
        if tp in self.pinned:
            return iter(())
        replicas, racks = self.replicas[tp], self.racks
        own, others = self._racks_around(tp, source)
        return itertools.islice((d for d in ranked if d not in replicas and (
            (rack := racks.get(d)) is None or rack == own or rack not in others)), n)  # `_rack_open`, inlined

    def free(self, tp: TopicPartition, source: int, dest: int) -> bool:
        """`dest` holds no replica of `tp` and racks stay distinct: a move that only limits could still refuse."""
        return list(self.open_to(tp, source, (dest,), 1)) == [dest]

    def lead_fits(self, tp: TopicPartition, broker: int) -> bool:
        return tp not in self.pinned and self._within("network_out", broker, self.value["network_out"][tp])


def _by_value(ranks: Mapping[TopicPartition, float],
              replicas: Mapping[TopicPartition, tuple[int, ...]]) -> tuple[Ranked, Iterable[tuple[int, ...]]]:
    """Every (value, partition) pair, sorted, and each pair's replicas (`replicas` has the keys of `ranks`, in their
    order, as every value map of the state does: read alongside, not looked up). Partitions in order (a snapshot
    lists them so) break ties by their position: equal sizes are common, and comparing their partitions (names
    first) took most of a million-partition sort. The positions are sorted by value alone, floats compared in C:
    2.9 s to 1.8 s at a million against sorting (value, position) pairs."""
    keys = list(ranks)
    if ascending(keys):
        values = list(ranks.values())
        order = sorted(range(len(keys)), key=values.__getitem__)  # stable: equal values keep the partitions' order
        entries = list(zip(map(values.__getitem__, order), map(keys.__getitem__, order)))
        return entries, map(list(replicas.values()).__getitem__, order)
    entries = sorted(zip(ranks.values(), keys, strict=True))
    return entries, map(replicas.__getitem__, map(operator.itemgetter(1), entries))


SORTED_INSERTS = 8  # changes to a list laid over one by one, at least; more: the list filtered and sorted again
INSERTS_PER_ENTRY = 1 / 8  # and up to this many per entry of the list


def _caught_up(ranked: Ranked, changes: list[tuple[bool, tuple[float, TopicPartition]]]) -> Ranked:
    """`ranked` with `changes` laid over in order (an entry is in a list at most once), still sorted. One change
    costs a bisection and a move of the entries after it (in C); filtering and sorting costs every entry's hash and
    comparison, in a list of 3,000 as much as 400 changes (measured: 550 us against 1.5 us a change), and held the
    million-partition walks' lists at 8 changes for 7 s."""
    if len(changes) <= max(SORTED_INSERTS, len(ranked) * INSERTS_PER_ENTRY):
        for add, entry in changes:
            if add:
                bisect.insort(ranked, entry)
            else:
                del ranked[bisect.bisect_left(ranked, entry)]
        return ranked
    net: dict[tuple[float, TopicPartition], int] = {}
    for add, entry in changes:
        net[entry] = net.get(entry, 0) + (1 if add else -1)
    gone = {entry for entry, n in net.items() if n < 0}
    kept = [entry for entry in ranked if entry not in gone] if gone else ranked
    kept.extend(entry for entry, n in net.items() if n > 0)
    kept.sort()
    return kept


def _rack_open(rack: str | None, own: str | None, others: set[str | None]) -> bool:
    """kops's rack rule for a destination on `rack`: no rack, the source's own, or none of the other replicas'."""
    return rack is None or rack == own or rack not in others


def _out_loads(replicas: Mapping[TopicPartition, tuple[int, ...]], rates: Iterable[float],
               inputs: GoalInputs) -> dict[TopicPartition, float]:
    """Each partition's network out on its leader, write rate × (followers + fan-out) as `GoalInputs.out_load`
    has it, computed in C over a million partitions (the same products); `rates`: the partitions' write rates, in
    their order (network in's values, read alongside instead of looked up again)."""
    fans = map(inputs.fanout.get, map(operator.itemgetter(0), replicas), itertools.repeat(1))
    factors = map(operator.add, map(operator.sub, map(len, replicas.values()), itertools.repeat(1)), fans)
    return dict(zip(replicas, map(operator.mul, rates, factors)))


def state_of(snapshot: Snapshot, sizes: Mapping[TopicPartition, int], write: Mapping[TopicPartition, float],
             caps: Capacities, fanout: Mapping[str, int] | None = None) -> GoalState:
    """The optimizer's state for a snapshot: live brokers with their racks, each partition where it is going (a
    reassignment in flight: its target), loads, and each broker's capacities and limits where known."""
    state = goal_state(assignment_of(snapshot), {b.id: b.rack for b in snapshot.brokers}, sizes, write, caps, fanout)
    return with_elected(state, snapshot)


def assignment_of(snapshot: Snapshot) -> dict[TopicPartition, tuple[int, ...]]:
    """Each partition where it is going: a reassignment in flight, its target."""
    return {tp: tuple(part.target_replicas if part.reassigning else part.replicas)
            for name, topic in snapshot.topics.items()
            for tp, part in zip(keys_of(name, topic.partitions), topic.partitions.values())}


def with_elected(state: GoalState, snapshot: Snapshot) -> GoalState:
    """`state` with each partition's elected leader and ISR from `snapshot` (the goal `preferred_leaders`)."""
    leaders: dict[TopicPartition, int] = {}
    isr: dict[TopicPartition, tuple[int, ...]] = {}
    for name, topic in snapshot.topics.items():
        for number, part in topic.partitions.items():
            if part.state is not None and part.state.leader >= 0:
                tp = TopicPartition(name, number)
                leaders[tp], isr[tp] = part.state.leader, tuple(part.state.isr)
    state.inputs = replace(state.inputs, leaders=leaders, isr=isr)
    return state


def goal_state(assignment: Assignment, racks: Mapping[int, str | None], sizes: Mapping[TopicPartition, int],
               write: Mapping[TopicPartition, float], caps: Capacities,
               fanout: Mapping[str, int] | None = None) -> GoalState:
    """The optimizer's state for an assignment over the brokers of `racks` (its only destinations), with each
    broker's capacities and limits where known: `kops rebalance` passes every registered broker, `kops plan` the
    brokers a play leaves eligible."""
    brokers = sorted(racks)
    capacity = {r: {b: v for b in brokers if (v := caps.figure(b, r).value) is not None}
                for r in ("disk", "network_in", "network_out")}
    limits = {r: {b: v for b in brokers if (v := caps.limit(b, r)) is not None} for r in RESOURCES}
    inputs = GoalInputs(racks=dict(racks), sizes=dict(sizes), write=dict(write), fanout=dict(fanout or {}),
                        capacity=capacity)
    return GoalState(assignment, inputs, {r: v for r, v in limits.items() if v})
