"""Hard limits first: a broker over a capacity limit sheds until it is within it, before any goal is balanced.

Cruise Control's capacity goals (DiskCapacityGoal, NetworkInboundCapacityGoal, NetworkOutboundCapacityGoal,
ReplicaCapacityGoal) are hard and come before every distribution goal. kops's limits do too, whatever the goal
list: `kops rebalance --goals replicas` on a cluster with a broker over its disk limit first moves disk off that
broker, then evens replicas (goals.md §5). A destination takes a replica only within every limit of its own
(`GoalState.fits`), so relief never moves a violation elsewhere. A broker that nothing can relieve stays over, and
the plan's capacity report says so. Network out follows leadership, so it is shed by a leadership change first.
"""

from __future__ import annotations

import bisect

from kops.model.partitions import TopicPartition
from kops.planner.actions import EPS, Action, Spend
from kops.planner.goal_state import GoalState

HARD = ("disk", "network_in", "network_out", "replicas")
CANDIDATES = 8  # replicas tried per step: those just large enough to clear the excess first
LAST = TopicPartition("\U0010ffff", 1 << 62)  # sorts after every partition of the same value


def limit_name(resource: str) -> str:
    """The goal an action names (the plan's reason: "rebalance disk limit")."""
    return f"{resource} limit"


RELIEF_GOALS = frozenset(limit_name(r) for r in HARD)


def relieve(state: GoalState, spend: Spend) -> list[Action]:
    """Shed every broker over a limit, resource by resource, to brokers with room; the actions taken, in order."""
    actions: list[Action] = []
    for resource in HARD:
        limit = state.limits.get(resource, {})
        for broker in [b for b in state.brokers if b in limit and state.load[resource][b] > limit[b] + EPS]:
            while state.load[resource][broker] > limit[broker] + EPS:
                action = _shed_one(state, spend, resource, broker)
                if action is None:
                    break
                actions.append(action)
    return actions


def _candidates(state: GoalState, resource: str, broker: int) -> list[TopicPartition]:
    """The broker's replicas (network out: the partitions it leads) that best clear its excess: the smallest at
    least as large as the excess first (one move clears it), then the largest below it. Counts: the lightest."""
    ranked = state.ranked(resource, broker)
    if resource == "replicas":
        return [tp for _, tp in ranked[:CANDIDATES]]
    ranked = ranked[bisect.bisect_right(ranked, (0.0, LAST)):]  # a replica carrying none of it lowers nothing
    excess = state.load[resource][broker] - state.limits[resource][broker]
    i = bisect.bisect_left(ranked, (excess, TopicPartition("", -1)))
    above = [tp for _, tp in ranked[i:i + CANDIDATES // 2]]
    below = [tp for _, tp in reversed(ranked[max(0, i - CANDIDATES // 2):i])]
    return above + below


def _roomiest(state: GoalState, resource: str, skip: int) -> list[int]:
    """Other brokers, the lowest use of `resource` against its limit first; brokers without a limit after them."""
    limit = state.limits.get(resource, {})
    load = state.load[resource]

    def key(b: int) -> tuple[int, float, int]:
        return (0, load[b] / limit[b], b) if limit.get(b) else (1, load[b], b)

    return sorted((b for b in state.brokers if b != skip), key=key)


def _shed_one(state: GoalState, spend: Spend, resource: str, broker: int) -> Action | None:
    """One action that lowers `broker`'s `resource`: a leadership change (network out), else a replica move."""
    candidates = _candidates(state, resource, broker)
    if resource == "network_out":
        handed = _handover(state, spend, candidates, broker)
        if handed is not None:
            return handed
    dests = _roomiest(state, resource, broker)
    for tp in candidates:
        size = state.value["disk"][tp]
        if not spend.move_allowed(size):
            continue  # a smaller candidate may still fit the byte budget
        for dest in dests:
            if state.fits(tp, broker, dest):
                state.move(tp, broker, dest)
                spend.moves += 1
                spend.bytes += size
                return Action(limit_name(resource), tp, broker, dest)
    return None


def _handover(state: GoalState, spend: Spend, led: list[TopicPartition], broker: int) -> Action | None:
    """Leadership of one of `led` handed to a follower with room in its own network out (no data copied)."""
    for tp in led:
        if not spend.lead_allowed():
            return None
        for follower in sorted(state.replicas[tp][1:], key=lambda b: (state.load["network_out"][b], b)):
            if state.lead_fits(tp, follower):
                state.lead(tp, follower)
                spend.leader_moves += 1
                return Action(limit_name("network_out"), tp, broker, follower, leadership=True)
    return None
