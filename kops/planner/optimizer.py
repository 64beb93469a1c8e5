"""One walk over a prioritized goal list: each action improves its goal and worsens none above it.

Goals are taken in order, in sweeps, until a sweep takes no action (or MAX_SWEEPS pass: not converged). A goal's
pass sheds load from every broker above its band and pulls load into every broker below it: a replica move (the
replica whose load best fills the gap, to the brokers with the most room; a leader's replica may hand its
leadership to a follower as it moves), or, for goals that follow leadership, a leadership change first (it copies
no data; where every follower sits at the band's top, relayed through one of them to a broker with room: for the
leader count only from a broker above its starting peak). Most
refused actions push a broker out of a band, which is read before the action is laid over (`_Walk._pushed_out`).
An action is judged before it is made (kops/planner/trial.py) and taken only when
1. the destination keeps every hard limit and the partition's racks stay distinct where they were;
2. the acting goal's distance over the brokers it touches falls;
3. no touched broker's distance grows, for the acting goal or any goal above it (a destination pushed out of its
   band would have to shed again: the same bytes moved twice);
4. no touched broker goes above a lower goal's starting peak, so no goal's figure ends worse than it started.
Each action lowers the vector of the goals' distances lexicographically, so the walk ends, and a second walk over
its result finds nothing to do. docs/design/goals.md §5 and §6.1.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from kops.model.partitions import TopicPartition
from kops.planner.actions import EPS, Action, Spend
from kops.planner.bands import COUNTS, Band, Extremes, TopicBand, bands, beyond, extremes
from kops.planner.goal_state import LEADER_LOADS, REPLICA_LOADS, GoalState
from kops.planner.relief import LAST, relieve
from kops.planner.trial import Trial, handover_trial, lead_trial, move_trial, relay_trial, swap_trial

MAX_SWEEPS = 16
CANDIDATES = 6  # replicas tried per step, around the gap
DESTINATIONS = 8  # brokers tried per replica, most room first
LEADERS_SCANNED = 32  # brokers above which `_followed` keeps, per band pass, a list of the partitions a broker follows
FOLLOWERS_SCANNED = 64  # replicas read around the gap for followers, where every candidate led
RELAYS_TRIED = 4  # a follower's own leaderships a relay tries to pass on, lightest first
LEADERSHIPS_TRIED = 64  # a broker's leaderships the leader count tries to hand on per step, lightest first
SWAP_CANDIDATES = 3  # replicas a swap tries to give
SWAP_WINDOW = 8  # the destination's replicas looked at, each side of the size a swap wants back
SWAP_TRIES = 3  # of those, the nearest tried
AnyBand = Band | TopicBand
_first = operator.itemgetter(0)
TOPIC = "topic_replicas"


@dataclass(frozen=True)
class Outcome:
    actions: tuple[Action, ...]
    converged: bool
    skipped: dict[str, str] = field(default_factory=dict)


class _Walk:
    def __init__(self, state: GoalState, goals: tuple[AnyBand, ...], spend: Spend) -> None:
        self.state, self.goals, self.spend = state, goals, spend
        self.log: list[Action] = []
        topics = [(i, g) for i, g in enumerate(goals) if isinstance(g, TopicBand)]
        self.topic_index = topics[0][0] if topics else None
        self.topic_start = self.topic_now = topics[0][1].total(state) if topics else 0
        # per goal, the utilization and count goals after it: an action may not raise them above their starting peak
        self.below = [tuple(g for g in goals[i + 1:] if isinstance(g, Band)) for i in range(len(goals))]
        sizes = sorted(state.value["disk"].values())
        self.cheap = sizes[len(sizes) // 2] if sizes else 0.0  # the median replica size (no action changes sizes)
        self._by_topic: dict[str, list[TopicPartition]] | None = None
        # per broker, what a leadership pull read from its own replicas (`_followed_by_scan`), for the band pass
        self.followed: dict[int, list[TopicPartition]] = {}
        self.now = Trial(state)  # no change laid over: reads the state as it stands, so one serves the whole walk
        self._bands_read: dict[tuple[int, tuple[str, ...]], tuple[Band, ...]] = {}

    def partitions_by_topic(self) -> dict[str, list[TopicPartition]]:
        """Each topic's partitions, built once: a topic's replicas on a broker without scanning all it holds."""
        if self._by_topic is None:
            found: dict[str, list[TopicPartition]] = defaultdict(list)
            for tp in self.state.replicas:
                found[tp.topic].append(tp)
            self._by_topic = dict(found)
        return self._by_topic

    def _distances(self, band: AnyBand, brokers: Sequence[int], topics: tuple[str, ...], trial: Trial) -> list[float]:
        if isinstance(band, TopicBand):
            return [band.over(trial.count(topic, b), topic) for topic in topics for b in brokers]
        out: list[float] = []
        for b in brokers:
            out.extend(band.parts(trial.load(band.name, b), b))
        return out

    def _accept(self, index: int, brokers: tuple[int, ...], topics: tuple[str, ...], trial: Trial) -> bool:
        """Would the action (`trial`) lower goal `index` over `brokers` and raise no goal there? Judged before it
        is made (kops/planner/trial.py); the caller makes it when it is accepted. The acting goal is judged first,
        and a goal whose loads the action leaves alone is not read (it cannot grow nor rise)."""
        now, changed, goal = self.now, trial.changed(), self.goals[index]
        if isinstance(goal, Band):
            if not _lowers(goal, brokers, trial, self.state.load[goal.name]):
                return False
        else:
            before = self._distances(goal, brokers, topics, now)
            after = self._distances(goal, brokers, topics, trial)
            if not sum(after) < sum(before) - EPS or any(a > b + EPS for a, b in zip(after, before, strict=True)):
                return False
        for band in self.goals[:index]:
            if (band.name == TOPIC or band.name in changed) and any(
                    a > b + EPS for a, b in zip(self._distances(band, brokers, topics, trial),
                                                self._distances(band, brokers, topics, now), strict=True)):
                return False
        load = self.state.load
        for g in self.below[index]:
            if g.name in changed:  # raised above where it was and above the goal's starting peak
                name, per, scale, peak = g.name, load[g.name], g.scale, g.peak + 1e-9
                for b in brokers:
                    x = trial.load(name, b)
                    if x > per[b] + 1e-9 and x * scale[b] > peak:
                        return False
        if self.topic_index is None:
            return True
        grown = self._topic_excess(brokers, topics, trial) - self._topic_excess(brokers, topics, now)
        if grown > 0 and self.topic_now + grown > self.topic_start:
            return False
        self.topic_now += grown
        return True

    def _topic_excess(self, brokers: tuple[int, ...], topics: tuple[str, ...], trial: Trial) -> int:
        if self.topic_index is None:
            return 0
        band = self.goals[self.topic_index]
        assert isinstance(band, TopicBand)
        return band.excess(trial, topics, brokers)

    def move(self, index: int, tp: TopicPartition, source: int, dest: int, opened: bool = False) -> bool:
        """The replica on `source` to `dest`; where it leads and the move with its leadership is refused, the move
        that hands the leadership to a follower (`_handover`). `opened`: `dest` came from `GoalState.open_to`,
        which read its replicas, pins and racks already."""
        state = self.state
        size = state.value["disk"][tp]
        if (not self.spend.move_allowed(size) or self._pushed_out(index, REPLICA_LOADS, tp, source, dest)
                or not (state.within_limits(tp, source, dest) if opened else state.fits(tp, source, dest))):
            return False
        if self._accept(index, (source, dest), (tp.topic,), move_trial(state, tp, source, dest)):
            state.move(tp, source, dest)
            self.log.append(Action(self.goals[index].name, tp, source, dest))
        elif not self._handover(index, tp, source, dest):
            return False
        self.spend.moves += 1
        self.spend.bytes += size
        return True

    def _pushed_out(self, index: int, loads: tuple[str, ...], tp: TopicPartition, source: int | None,
                    dest: int | None) -> bool:
        """Would `tp`'s `loads` going from `source` to `dest` take `dest` further above, or `source` further below,
        its band in the acting goal or one above it? `_accept` would refuse the action (and a move's handover) for
        the same floats, read here without laying the action over: most refused actions are these. None: that end
        is not read (a relay's middle broker both gains a leadership and loses one)."""
        load, value = self.state.load, self.state.value
        for band in self.read(index, loads):
            name = band.name  # `GoalState.per`, inlined: a walk asks this of every action it tries
            if _pushes(band, load[name], 1.0 if name in COUNTS else value[name][tp], source, dest):
                return True
        return False

    def read(self, index: int, loads: tuple[str, ...]) -> tuple[Band, ...]:
        """The bands `_pushed_out` reads for goal `index` and `loads`: those up to it that carry one of `loads`."""
        found = self._bands_read.get((index, loads))
        if found is None:
            found = self._bands_read[(index, loads)] = tuple(
                band for band in self.goals[:index + 1] if isinstance(band, Band) and band.name in loads)
        return found

    def _handover(self, index: int, tp: TopicPartition, source: int, dest: int) -> bool:
        """A leader's replica moved while the follower leading fewest partitions takes its leadership: the copy
        arrives as a follower. A disk move of a leader onto a broker at the leader count's peak was refused, and
        with leaders evenly spread (a drained cluster) that held disk 15 points above its bound."""
        state = self.state
        replicas = state.replicas[tp]
        followers = [b for b in replicas[1:] if b in state.racks]  # a broker outside the walk never takes the lead
        if replicas[0] != source or not followers or not self.spend.lead_allowed():
            return False
        follower = min(followers, key=lambda b: (state.load["leaders"][b], b))
        if not state.lead_fits(tp, follower):
            return False
        if not self._accept(index, (source, dest, follower), (tp.topic,),
                            handover_trial(state, tp, source, dest, follower)):
            return False
        state.move(tp, source, dest)
        state.lead(tp, follower)
        self.spend.leader_moves += 1
        name = self.goals[index].name
        self.log += [Action(name, tp, source, dest), Action(name, tp, dest, follower, True, True)]
        return True

    def lead(self, index: int, tp: TopicPartition, broker: int) -> bool:
        state = self.state
        old = state.replicas[tp][0]
        if (not self.spend.lead_allowed() or self._pushed_out(index, LEADER_LOADS, tp, old, broker)
                or not state.lead_fits(tp, broker)):
            return False
        if not self._accept(index, (old, broker), (tp.topic,), lead_trial(state, tp, broker)):
            return False
        state.lead(tp, broker)
        self.spend.leader_moves += 1
        self.log.append(Action(self.goals[index].name, tp, old, broker, leadership=True))
        return True

    def relay(self, index: int, tp: TopicPartition, via: int, other: TopicPartition, to: int) -> bool:
        """`via` takes `tp`'s leadership and hands `other`'s to `to`: two leadership changes judged as one action
        (`via` ends where it was in the count). Where every follower sits at the band's top, no single change
        lowers the leader above it, and a relief that moved a leader onto the count's peak left it there."""
        state, spend = self.state, self.spend
        old = state.replicas[tp][0]
        if (spend.max_leader_moves is not None and spend.leader_moves + 2 > spend.max_leader_moves
                or self._pushed_out(index, LEADER_LOADS, tp, old, None)
                or self._pushed_out(index, LEADER_LOADS, other, None, to)
                or not state.lead_fits(tp, via) or not state.lead_fits(other, to)):
            return False
        if not self._accept(index, (old, via, to), (tp.topic, other.topic), relay_trial(state, tp, via, other, to)):
            return False
        state.lead(tp, via)
        state.lead(other, to)
        spend.leader_moves += 2
        name = self.goals[index].name
        self.log += [Action(name, tp, old, via, True), Action(name, other, via, to, True, True)]
        return True

    def swap(self, index: int, tp: TopicPartition, source: int, other: TopicPartition, dest: int) -> bool:
        """`tp`'s replica on `source` and `other`'s on `dest` change places: counts stay, loads shift by the
        difference (two replica moves against the budget)."""
        state = self.state
        sizes = state.value["disk"][tp] + state.value["disk"][other]
        if (self.spend.max_moves is not None and self.spend.moves + 2 > self.spend.max_moves
                or self.spend.max_bytes is not None and self.spend.bytes + sizes > self.spend.max_bytes
                or not state.free(tp, source, dest) or not state.free(other, dest, source)):
            return False
        trial = swap_trial(state, tp, source, other, dest)
        if not trial.within((source, dest)) or not self._accept(index, (source, dest), (tp.topic, other.topic), trial):
            return False
        state.move(tp, source, dest)
        state.move(other, dest, source)
        self.spend.moves += 2
        self.spend.bytes += sizes
        name = self.goals[index].name
        self.log += [Action(name, tp, source, dest), Action(name, other, dest, source, joined=True)]
        return True


def _pushes(band: Band, load: Mapping[int, float], amount: float, source: int | None, dest: int | None) -> bool:
    """Does `amount` of `band`'s load going from `source` to `dest` take `dest` further above its band, or `source`
    further below it (`_Walk._pushed_out`)? None: that end is not read."""
    if dest is not None:
        x, hi, scale = load[dest], band.hi[dest], band.scale[dest]
        if max(0.0, x + amount - hi) * scale > max(0.0, x - hi) * scale + EPS:
            return True
    if source is not None:
        x, lo, scale = load[source], band.lo[source], band.scale[source]
        if max(0.0, lo - (x + -amount)) * scale > max(0.0, lo - x) * scale + EPS:
            return True
    return False


def _lowers(band: Band, brokers: tuple[int, ...], trial: Trial, load: Mapping[int, float]) -> bool:
    """Does the action (`trial`) lower `band`'s distance over `brokers` (by more than EPS), taking none of them
    further above or below the band? `_Walk._distances` of the state and of the trial, summed in the same order,
    without the lists."""
    name, hi, lo, scale = band.name, band.hi, band.lo, band.scale
    before = after = 0.0
    for b in brokers:
        x, y, top, bottom, weight = load[b], trial.load(name, b), hi[b], lo[b], scale[b]
        above_x, below_x = max(0.0, x - top) * weight, max(0.0, bottom - x) * weight
        above_y, below_y = max(0.0, y - top) * weight, max(0.0, bottom - y) * weight
        if above_y > above_x + EPS or below_y > below_x + EPS:
            return False
        before = before + above_x + below_x
        after = after + above_y + below_y
    return after < before - EPS


class _LeadRoom:
    """The brokers `_pushed_out` would refuse a leadership for goal `index` (a leadership goal's band pass), kept
    as actions change loads. Where every band it reads is a count, each leadership weighs one and the answer
    depends on the broker alone: a leader-count shed asks it of 64 leaderships' followers, most at the band's top,
    and reading the bands per follower (or per shed) was a quarter of a million-partition walk. Else nothing is
    refused here (`lead` reads it per partition)."""

    def __init__(self, walk: _Walk, index: int) -> None:
        self.read, self.load = walk.read(index, LEADER_LOADS), walk.state.load
        self.counted = all(band.name in COUNTS for band in self.read)
        self.brokers = set(walk.state.brokers)
        self.blocked: set[int] = set()
        self.refresh(self.brokers)

    def _pushes(self, source: int | None, dest: int | None) -> bool:
        return any(_pushes(band, self.load[band.name], 1.0, source, dest) for band in self.read)

    def refresh(self, touched: Iterable[int]) -> None:
        if not self.counted:
            return
        for b in touched:
            if b in self.brokers and self._pushes(None, b):
                self.blocked.add(b)
            else:
                self.blocked.discard(b)

    def refused_from(self, source: int) -> bool:
        """Would any leadership leaving `source` take it further below its band (a count: whichever it is)?"""
        return self.counted and self._pushes(source, None)


class _Order:
    """The brokers by `key` (then id), kept exact as actions change loads: a step re-ranks only the brokers whose
    loads changed (`GoalState.touched`, tried-and-undone actions included), instead of sorting every broker."""

    def __init__(self, brokers: Sequence[int], key: Callable[[int], float]) -> None:
        self.key = key
        self.now = {b: key(b) for b in brokers}
        self.order = sorted((k, b) for b, k in self.now.items())

    def refresh(self, touched: set[int]) -> None:
        for b in touched:
            if b in self.now:
                del self.order[bisect.bisect_left(self.order, (self.now[b], b))]
                self.now[b] = self.key(b)
                bisect.insort(self.order, (self.now[b], b))

    def brokers(self) -> Iterator[int]:
        """The brokers in order, lazily: a step usually needs the first few."""
        return (b for _, b in self.order)

    def first(self, skip: int, n: int) -> list[int]:
        """The first `n` brokers in order but `skip`."""
        return list(itertools.islice((b for _, b in self.order if b != skip), n))

    def fewest(self, counts: Mapping[int, int], skip: int, n: int) -> list[int]:
        """The first `n` brokers but `skip` by (how many of a topic they hold, key, id)."""
        found = [b for _, b in itertools.islice(((k, b) for k, b in self.order
                                                 if b != skip and not counts.get(b, 0)), n)]
        if len(found) < n:
            holding = sorted((c, self.now[b], b) for b, c in counts.items() if c and b != skip and b in self.now)
            found += [b for _, _, b in holding[:n - len(found)]]
        return found


def _around(state: GoalState, name: str, ranked: list[tuple[float, TopicPartition]],
            gap: float) -> list[TopicPartition]:
    """The candidates whose value best fills `gap`: the largest at most the gap first, then smaller ones, then the
    smallest above it. For counts (every replica worth one) the lightest; for rates, a wider window around the gap
    taken smallest in bytes first, since bytes are what a move costs."""
    if name in COUNTS:
        return [tp for _, tp in ranked[:CANDIDATES]]
    i = bisect.bisect_right(ranked, (gap, LAST))
    if name == "disk":
        below = [tp for _, tp in reversed(ranked[max(0, i - CANDIDATES + 2):i])]
        return below + [tp for _, tp in ranked[i:i + 2]]
    window = [tp for _, tp in ranked[max(0, i - 2 * CANDIDATES):i + 2]]
    return sorted(window, key=lambda tp: (state.value["disk"][tp], tp))[:CANDIDATES]


def _shed(walk: _Walk, index: int, band: Band, broker: int, roomy: _Order, room: _LeadRoom | None) -> bool:
    """One action that lowers `broker`, above its band: a leadership change first where the goal follows it
    (`room`: the pass's refusals of a leadership, for a leadership goal)."""
    state = walk.state
    gap = state.load[band.name][broker] - band.hi[broker]
    counts = band.name in COUNTS
    ranked = state.ranked(band.name, broker)
    candidates = _around(state, band.name, ranked, gap)
    if band.leadership:
        # the leader count tries more than CANDIDATES: where the lightest leaderships' followers all sit at the band's
        # top, a broker of a thousand leaderships stopped above its band (a million partitions: 121.6% of the mean,
        # the band's top 109%), and each refusal is read before a trial is built (`_pushed_out`)
        tried = [tp for _, tp in ranked[:LEADERSHIPS_TRIED]] if counts else candidates
        blocked, hi = room.blocked if room is not None else set(), band.hi
        replicas = state.replicas
        # most of the lightest leaderships have every follower blocked: passed over in C, in the same order
        for tp in (tp for tp in tried if not blocked.issuperset(replicas[tp][1:])) if (
                room is None or not room.refused_from(broker)) else ():
            # a follower on a broker outside the walk's (one a play drains) never takes the lead
            others = [b for b in replicas[tp][1:] if b in hi and b not in blocked]
            if len(others) > 1:
                others.sort(key=lambda b: (state.load[band.name][b] - band.hi[b]) * band.scale[b])
            if any(walk.lead(index, tp, b) for b in others):
                return True
        # leadership goals change leaders only: a replica moved for them is bytes no data goal asked for. A relay
        # for a rate (network out, leader bytes in) wherever the broker lies above its band: the followers of a
        # drained cluster sit at the leader count's peak, a goal below. For the leader count only above the run's
        # starting peak (relief put it there): tried for every broker above its band, the searches that find nothing
        # cost a million-partition walk more than a quarter of its time.
        return ((not counts or state.load[band.name][broker] * band.scale[broker] > band.peak + EPS)
                and _relay(walk, index, band, broker, candidates))
    if _moved_any(walk, index, broker, candidates, roomy):
        return True
    if any(state.replicas[tp][0] == broker for tp in candidates) and _moved_any(
            walk, index, broker, _followers_near(state, band.name, broker, gap, set(candidates)), roomy):
        return True
    if counts:
        return _past_pinned(walk, index, band, broker, candidates, roomy)
    return _swap_down(walk, index, band, broker, candidates, roomy, gap)


def _past_pinned(walk: _Walk, index: int, band: Band, broker: int, candidates: list[TopicPartition],
                 roomy: _Order) -> bool:
    """A count goal's next lightest replicas, where no broker could take any of the lightest ones at all (racks,
    pins): a broker alone in its rack holds a replica of every partition spread over all racks, and those, the
    lightest by position, kept it from shedding the ones that could leave (a Kafka 4 lab of racks 2, 2 and 1: the
    lone broker stayed at 18 against a share of 12, its rack-free replicas never tried). Read only when every
    candidate is pinned: a shed that failed on the goals' limits reads no further."""
    state = walk.state
    if any(next(state.open_to(tp, broker, roomy.brokers(), 1), None) is not None for tp in candidates):
        return False
    tried = set(candidates)
    return _moved_any(walk, index, broker, (tp for _, tp in state.ranked(band.name, broker)[:FOLLOWERS_SCANNED]
                                            if tp not in tried), roomy)


def _moved_any(walk: _Walk, index: int, broker: int, partitions: Iterable[TopicPartition], roomy: _Order) -> bool:
    """The first of `partitions` (in order) that a broker open to it takes from `broker`, the most room in the
    goal's band first (the broker itself holds the partition: never open)."""
    state = walk.state
    return any(walk.move(index, tp, broker, d, opened=True) for tp in partitions
               for d in state.open_to(tp, broker, roomy.brokers(), DESTINATIONS))


def _relay(walk: _Walk, index: int, band: Band, broker: int, candidates: list[TopicPartition]) -> bool:
    """A leadership of `broker` relayed through a follower at the band's top (`_Walk.relay`) to one of that
    follower's own followers with room: its lightest leaderships first, at most RELAYS_TRIED per follower."""
    state, hi = walk.state, band.hi
    for tp in candidates:
        for via in state.replicas[tp][1:]:
            if via not in hi:
                continue
            for _, other in state.ranked(band.name, via)[:RELAYS_TRIED]:
                for to in state.replicas[other][1:]:
                    if to != broker and to in hi and walk.relay(index, tp, via, other, to):
                        return True
    return False


def _followers_near(state: GoalState, name: str, broker: int, gap: float,
                    tried: set[TopicPartition]) -> list[TopicPartition]:
    """Up to CANDIDATES of the broker's follower replicas nearest the gap (counts: the lightest), not yet tried.
    Where leaders are spread evenly, every broker sits at the leader count's starting peak, and a leader's replica
    can go nowhere (a lower goal may not rise above its start): a drained cluster's disk stopped 15 points above
    its bound on candidates that all led."""
    ranked = state.ranked(name, broker)
    if name in COUNTS:
        order: Iterable[tuple[float, TopicPartition]] = ranked[:FOLLOWERS_SCANNED]
    else:
        i = bisect.bisect_right(ranked, (gap, LAST))
        below, above = reversed(ranked[max(0, i - FOLLOWERS_SCANNED):i]), ranked[i:i + FOLLOWERS_SCANNED // 4]
        order = itertools.chain(below, above)
    found = (tp for _, tp in order if tp not in tried and state.replicas[tp][0] != broker)
    return list(itertools.islice(found, CANDIDATES))


def _swap_down(walk: _Walk, index: int, band: Band, broker: int, candidates: list[TopicPartition],
               roomy: _Order, gap: float) -> bool:
    """Where no single move fits (a destination with no room in a higher goal's band): give a replica and take back
    one lighter in this goal. For disk, one smaller by about the gap; for a rate, one of about the same size (so
    neither disk moves) that carries less."""
    state = walk.state
    for tp in candidates[:SWAP_CANDIDATES]:
        for d in state.open_to(tp, broker, roomy.brokers(), DESTINATIONS):
            others = _lighter(state, band, tp, d, gap)
            if any(walk.swap(index, tp, broker, other, d) for other in others):
                return True
    return False


def _lighter(state: GoalState, band: Band, tp: TopicPartition, dest: int, gap: float) -> list[TopicPartition]:
    """`dest`'s replicas a swap for `tp` may take back: lighter than it in the goal, nearest first by what it
    should weigh (disk: the gap less; a rate: the same bytes)."""
    value = state.value[band.name][tp]
    if band.name == "disk":
        room = max(0.0, band.hi[dest] - state.load["disk"][dest])
        key, ranked = value - min(gap, room) if room else value - gap / 2, state.ranked("disk", dest)
    else:
        key, ranked = state.value["disk"][tp], state.ranked("disk", dest)
    i = bisect.bisect_left(ranked, (max(0.0, key), TopicPartition("", -1)))
    near = ranked[max(0, i - SWAP_WINDOW):i + SWAP_WINDOW]
    lighter = [o for _, o in near if state.value[band.name][o] < value - EPS]
    return sorted(lighter, key=lambda o: (abs(state.value["disk"][o] - key), o))[:SWAP_TRIES]


def _pull(walk: _Walk, index: int, band: Band, broker: int, full: _Order) -> bool:
    """One action that raises `broker`, below its band: from the fullest brokers."""
    state = walk.state
    gap = band.lo[broker] - state.load[band.name][broker]
    if band.leadership:
        return any(walk.lead(index, tp, broker) for tp in _followed(walk, broker, full))
    for source in full.first(broker, DESTINATIONS):
        if any(walk.move(index, tp, source, broker) for tp in _around(state, band.name, state.ranked(band.name, source),
                                                                      gap)):
            return True
    return False


def _followed(walk: _Walk, broker: int, by_excess: _Order) -> list[TopicPartition]:
    """Up to CANDIDATES partitions `broker` follows, those whose leader lies furthest above its band first, then by
    partition (`_first_followed`). On a cluster of more than LEADERS_SCANNED brokers the first CANDIDATES × 8 are
    read once per band pass, and what the broker still follows of them is offered in that order (a pass's later
    pulls see the order as it was when they were read)."""
    if len(by_excess.order) > LEADERS_SCANNED:
        return _still_followed(walk, broker, by_excess)
    return _first_followed(walk.state, broker, by_excess, CANDIDATES)


def _still_followed(walk: _Walk, broker: int, by_excess: _Order) -> list[TopicPartition]:
    """The first CANDIDATES of the broker's list read this pass that it still follows (another leader, still held),
    read again when fewer are left: a million-partition walk pulled leaderships for minutes when each pull read
    them afresh."""
    state = walk.state
    cached = walk.followed.get(broker, [])
    cached[:] = [tp for tp in cached if broker in (replicas := state.replicas[tp]) and replicas[0] != broker]
    if len(cached) < CANDIDATES:
        cached = walk.followed[broker] = _first_followed(state, broker, by_excess, CANDIDATES * 8)
    return cached[:CANDIDATES]


def _first_followed(state: GoalState, broker: int, by_excess: _Order, n: int) -> list[TopicPartition]:
    """The first `n` partitions `broker` follows by (their leader's key in `by_excess`, partition): read leader by
    leader in that order (`GoalState.follows`), the leaders of one key together, until `n` are found. Scanning the
    broker's thousands of replicas for their leaders instead took a million-partition walk 6 s."""
    following, found = state.follows[broker], []
    for _, group in itertools.groupby(by_excess.order, key=_first):
        found += sorted(tp for _, leader in group for tp in following.get(leader, ()))
        if len(found) >= n:
            break
    return found[:n]


def _band_pass(walk: _Walk, index: int, band: Band) -> int:
    """Sheds from every broker above the band (most distant first), then pulls into every broker below it. Each
    phase keeps only its own broker order exact (a shed's roomiest destinations; a pull's fullest sources, drawn
    once the sheds are done)."""
    state = walk.state
    walk.followed.clear()
    load = state.load[band.name]
    state.touched.clear()
    over = sorted((b for b in state.brokers if load[b] > band.hi[b] + EPS),
                  key=lambda b: (-band.distance(state, b), b))
    roomy = _Order(state.brokers, lambda b: (load[b] - band.hi[b]) * band.scale[b])
    room = _LeadRoom(walk, index) if band.leadership else None
    taken = _while_outside(state, over, lambda b: load[b] > band.hi[b] + EPS,
                           lambda b: _shed(walk, index, band, b, roomy, room), (roomy, room))
    under = sorted((b for b in state.brokers if load[b] < band.lo[b] - EPS),
                   key=lambda b: (-band.distance(state, b), b))
    # pulls: fullest first (a leadership goal: its leaders furthest above their band first, `_followed`)
    full = _Order(state.brokers, (lambda b: band.hi[b] - load[b]) if band.leadership else
                  (lambda b: (band.lo[b] - load[b]) * band.scale[b]))
    return taken + _while_outside(state, under, lambda b: load[b] < band.lo[b] - EPS,
                                  lambda b: _pull(walk, index, band, b, full), (full,))


def _while_outside(state: GoalState, brokers: list[int], outside: Callable[[int], bool],
                   act: Callable[[int], bool], kept: Iterable[_Order | _LeadRoom | None]) -> int:
    """`act` on each broker, in order, while it lies `outside` its band and an action is found; what is `kept`
    follows the brokers each action touched."""
    taken = 0

    def seen() -> None:
        for order in kept:
            if order is not None:
                order.refresh(state.touched)
        state.touched.clear()

    for b in brokers:
        while outside(b) and act(b):
            taken += 1
            seen()
        seen()
    return taken


def _topic_pass(walk: _Walk, index: int, band: TopicBand) -> int:
    """Each broker holding more of a topic than its ceiling gives its lightest replicas of it to the brokers holding
    fewest of it, roomiest first in the goals above (a light replica to a roomy broker disturbs them least).
    A topic's spread is worth moving small replicas only: those no larger than the median."""
    state, taken = walk.state, 0
    above = [g for g in walk.goals[:index] if isinstance(g, Band)]

    def room(b: int) -> float:
        return max(((state.load[g.name][b] - g.hi[b]) * g.scale[b] for g in above), default=0.0)

    state.touched.clear()
    order, brokers, disk = _Order(state.brokers, room), set(state.brokers), state.value["disk"]
    partitions = walk.partitions_by_topic()
    for topic in sorted(band.ceiling):
        counts, ceiling = state.topic[topic], band.ceiling[topic]
        for b in sorted(x for x, n in counts.items() if n > ceiling and x in brokers):
            while counts.get(b, 0) > ceiling:
                mine = sorted((disk[tp], tp) for tp in partitions[topic]
                              if b in state.replicas[tp] and disk[tp] <= walk.cheap)
                dests = order.fewest(counts, b, DESTINATIONS)
                moved = any(walk.move(index, tp, b, d) for _, tp in mine[:CANDIDATES] for d in dests)
                order.refresh(state.touched)
                state.touched.clear()
                if not moved:
                    break
                taken += 1
    return taken


def optimize(state: GoalState, goals: tuple[str, ...], spend: Spend | None = None,
             tolerance: float = 0.0) -> Outcome:
    """Walk `goals` (in priority order) over `state`, changing it in place; the actions taken, in order. A goal that
    a playbook's `tolerance` leaves alone (`bands.beyond`) takes no action but still holds the goals below it.
    Hard limits come first (kops/planner/relief.py). Where relief moved anything, the bands are held to the run's
    start (`bands.extremes`: relief may lift a lower goal's peak), and a last round draws them from where the walk
    ends, as a second optimize would, so that it has nothing to do; so does a walk that lowered a goal's trough
    (`_trough_fell`). A broker that nothing could relieve may find room once the goals have moved, and then the
    bands are drawn again from where relief left the cluster."""
    spend = spend or Spend()
    start = extremes(state, goals)
    log = relieve(state, spend)
    held = start if log else None
    skipped: dict[str, str] = {}
    for _round in range(MAX_SWEEPS):
        made, skipped = bands(state, goals, held)
        drawn = extremes(state, goals)
        walk = _Walk(state, made, spend)
        converged = _sweeps(walk, made, [i for i, band in enumerate(made)
                                         if tolerance <= 0 or beyond(state, band, tolerance)])
        log += walk.log
        relief = relieve(state, spend)
        log += relief
        if not relief:
            if held is None and not (walk.log and _trough_fell(drawn, extremes(state, goals))):
                return Outcome(tuple(log), converged, skipped)
            held = None
    return Outcome(tuple(log), False, skipped)


def _trough_fell(drawn: Extremes, now: Extremes) -> bool:
    """Did the walk lower a goal's trough below the one its band was drawn from? A band's floor follows the trough
    (`bands`), so a second run would draw it lower: a source the walk kept from falling below the old floor could
    then give, and the second run would act. Peaks never rise (rule 4), and a lower peak or a higher trough only
    narrows a band where no broker lies outside it, so a fallen trough is the one change to walk again for."""
    return any(now[name][1] < trough - EPS for name, (_peak, trough) in drawn.items() if name in now)


def _sweeps(walk: _Walk, made: tuple[AnyBand, ...], acting: list[int]) -> bool:
    """Sweeps over the acting goals until one takes no action (converged) or MAX_SWEEPS pass."""
    for _sweep in range(MAX_SWEEPS):
        taken = sum(_topic_pass(walk, i, band) if isinstance(band, TopicBand) else _band_pass(walk, i, band)
                    for i, band in enumerate(made) if i in acting)
        if not taken:
            return True
    return False
