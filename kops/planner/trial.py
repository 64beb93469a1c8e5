"""An action judged before it is made: the state's loads and topic counts with the action's changes laid over them.

The optimizer tries about four actions for each it takes (kops/planner/optimizer.py). Making and undoing every one
cost the sorted lists' upkeep twice and re-ranked brokers nothing had changed. The changes are laid over in the
order the action itself applies them, so a load read here is the float the action would leave, bit for bit, and
the walk takes exactly the actions it took when it made each one to look.
"""

from __future__ import annotations

from collections.abc import Sequence

from kops.model.partitions import TopicPartition
from kops.planner.goal_state import LEADER_LOADS, REPLICA_LOADS, GoalState

Change = tuple[str, int, float]  # a load's name, the broker, the amount added
# the loads a replica's move (of a leader: with its leadership) and a leadership change name (`_moved`, `_led`)
_MOVED = frozenset(REPLICA_LOADS)
_MOVED_LEADING = frozenset(REPLICA_LOADS + LEADER_LOADS)
_LED = frozenset(LEADER_LOADS)


class Trial:
    """What `load` and `count` would read after the action: the state's own where the action changes nothing."""

    __slots__ = ("counts", "loads", "names", "state")

    def __init__(self, state: GoalState, changes: Sequence[Change] = (),
                 counts: Sequence[tuple[str, int, int]] = (), names: frozenset[str] | None = None) -> None:
        self.state = state
        self.names = names  # the loads `changes` name, where the caller knows them (`changed`)
        load = state.load
        self.loads: dict[tuple[str, int], float] = {}
        for name, broker, amount in changes:
            key = (name, broker)
            self.loads[key] = (self.loads[key] if key in self.loads else load[name][broker]) + amount
        topic = state.topic
        self.counts: dict[tuple[str, int], int] = {}
        for name, broker, n in counts:
            key = (name, broker)
            self.counts[key] = (self.counts[key] if key in self.counts else topic[name].get(broker, 0)) + n

    def changed(self) -> frozenset[str]:
        """The loads the action changes (a goal on any other reads the same before and after)."""
        return self.names if self.names is not None else frozenset(name for name, _ in self.loads)

    def load(self, name: str, broker: int) -> float:
        found = self.loads.get((name, broker))
        return self.state.load[name][broker] if found is None else found

    def count(self, topic: str, broker: int) -> int:
        found = self.counts.get((topic, broker))
        return self.state.topic[topic].get(broker, 0) if found is None else found

    def within(self, brokers: tuple[int, ...]) -> bool:
        """Every broker within each limit after the action, or no fuller than it was: a swap's two halves judged
        together (each alone may pass a limit the other brings back)."""
        load = self.state.load
        for resource, per_broker in self.state.limits.items():
            for b in brokers:
                limit = per_broker.get(b)
                now = self.load(resource, b)
                if limit is not None and now > limit and now > load[resource][b] + 1e-9:
                    return False
        return True


def _moved(state: GoalState, tp: TopicPartition, source: int, dest: int, out: list[Change]) -> None:
    """`GoalState.move`'s changes, in its order: the leadership off the source, the replica, the leadership on."""
    value = state.value
    size, rate = value["disk"][tp], value["network_in"][tp]
    leading = state.replicas[tp][0] == source
    sent = value["network_out"][tp]
    if leading:
        out += [("leaders", source, -1.0), ("leader_bytes_in", source, -rate), ("network_out", source, -sent)]
    out += [("disk", source, -size), ("network_in", source, -rate), ("replicas", source, -1.0),
            ("disk", dest, size), ("network_in", dest, rate), ("replicas", dest, 1.0)]
    if leading:
        out += [("leaders", dest, 1.0), ("leader_bytes_in", dest, rate), ("network_out", dest, sent)]


class MoveTrial(Trial):
    """A replica's move (`GoalState.move`) laid over when a load is read: each load it changes changes once, by
    the replica's (or the leadership's) amount, so `load` reads the float `Trial` would have laid over, without
    the maps a walk of half a million moves built for each."""

    __slots__ = ("dest", "source", "tp")

    def __init__(self, state: GoalState, tp: TopicPartition, source: int, dest: int) -> None:
        self.state, self.tp, self.source, self.dest = state, tp, source, dest
        self.names = _MOVED_LEADING if state.replicas[tp][0] == source else _MOVED

    def load(self, name: str, broker: int) -> float:
        now = self.state.load[name][broker]
        if (broker != self.source and broker != self.dest) or name not in (self.names or ()):
            return now
        amount = self.state.per(name, self.tp)
        return now + (-amount if broker == self.source else amount)

    def count(self, topic: str, broker: int) -> int:
        now = self.state.topic[topic].get(broker, 0)
        if topic != self.tp.topic or (broker != self.source and broker != self.dest):
            return now
        return now + (-1 if broker == self.source else 1)


def move_trial(state: GoalState, tp: TopicPartition, source: int, dest: int) -> Trial:
    return MoveTrial(state, tp, source, dest)


def _led(state: GoalState, tp: TopicPartition, old: int, broker: int, out: list[Change]) -> None:
    """`GoalState.lead`'s changes: the leader loads leave `old` for `broker`."""
    rate, sent = state.value["network_in"][tp], state.value["network_out"][tp]
    out += [("leaders", old, -1.0), ("leader_bytes_in", old, -rate), ("network_out", old, -sent),
            ("leaders", broker, 1.0), ("leader_bytes_in", broker, rate), ("network_out", broker, sent)]


def lead_trial(state: GoalState, tp: TopicPartition, broker: int) -> Trial:
    changes: list[Change] = []
    _led(state, tp, state.replicas[tp][0], broker, changes)
    return Trial(state, changes, (), _LED)


def relay_trial(state: GoalState, tp: TopicPartition, via: int, other: TopicPartition, to: int) -> Trial:
    """`via` leads `tp` (`GoalState.lead`), then `to` leads `other`, which `via` led."""
    changes: list[Change] = []
    _led(state, tp, state.replicas[tp][0], via, changes)
    _led(state, other, via, to, changes)
    return Trial(state, changes)


def handover_trial(state: GoalState, tp: TopicPartition, source: int, dest: int, follower: int) -> Trial:
    """The leader's replica moves from `source` to `dest` and `follower` takes the leadership: `GoalState.move`,
    then `GoalState.lead`, so the moved replica arrives as a follower."""
    changes: list[Change] = []
    _moved(state, tp, source, dest, changes)
    _led(state, tp, dest, follower, changes)
    return Trial(state, changes, [(tp.topic, source, -1), (tp.topic, dest, 1)])


def swap_trial(state: GoalState, tp: TopicPartition, source: int, other: TopicPartition, dest: int) -> Trial:
    """`tp` from `source` to `dest`, then `other` from `dest` to `source` (`other` never shares `tp`'s leader
    question: two partitions)."""
    changes: list[Change] = []
    _moved(state, tp, source, dest, changes)
    _moved(state, other, dest, source, changes)
    return Trial(state, changes, [(tp.topic, source, -1), (tp.topic, dest, 1),
                                  (other.topic, dest, -1), (other.topic, source, 1)])
