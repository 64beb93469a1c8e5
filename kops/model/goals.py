"""The balancing goals kops knows, their default order, and the one parser of a goal list.

A goal list reaches kops from `kops rebalance --goals`, the inventory variable `rebalance_goals` and a playbook's
`rebalance: {goals: ...}`; all three read it here, so a name means the same everywhere and a bad list gets the
same one-line answer. The order is the priority: a later goal never worsens an earlier one
(docs/design/goals.md §4, §5).
"""

from __future__ import annotations

from collections.abc import Sequence

GOAL_NAMES: tuple[str, ...] = ("disk", "network_in", "network_out", "replicas", "topic_replicas", "leaders",
                               "leader_bytes_in", "preferred_leaders")
ALIASES: dict[str, str] = {"bytes": "disk"}  # `--goal bytes` from before goal lists: the disk goal
# Resources first (a full disk or a saturated port is an outage, an uneven count a cost), disk before the network
# goals (a move is paid in disk bytes), data goals before leadership goals (those spend no replica moves), and
# preferred leaders last (an election only where it costs no higher goal anything): goals.md §4.
DEFAULT_GOALS: tuple[str, ...] = GOAL_NAMES
DEFAULT = "default"  # a goal list of this one word is DEFAULT_GOALS: `--goals default`, `rebalance_goals: default`
PREFERRED = "preferred_leaders"  # elections, not walk actions (kops/planner/preferred.py)
LEADERSHIP_GOALS = frozenset({"leaders", "leader_bytes_in", PREFERRED})  # moved by leadership alone
# Goals inside a broker (JBOD): its log dirs evened by disk moves, a step after the walk over the brokers
# (kops/planner/intra_broker.py), not one of the walk's goals; not in the default list (disk moves need the Admin
# API and a cluster with several dirs per broker).
DISK_WITHIN_BROKER = "disk_within_broker"
INTRA_BROKER_GOALS: tuple[str, ...] = (DISK_WITHIN_BROKER,)
NAMES: tuple[str, ...] = GOAL_NAMES + INTRA_BROKER_GOALS  # every name a goal list may hold


def broker_goals(goals: tuple[str, ...]) -> tuple[str, ...]:
    """The goals the walk over the brokers takes (kops/planner/optimizer.py): `goals` without the intra-broker
    ones."""
    return tuple(g for g in goals if g not in INTRA_BROKER_GOALS)


def goal_list(value: str | Sequence[str], where: str) -> tuple[str, ...]:
    """The goals named by `value` (a list, or one comma-separated string), aliases resolved, in order.

    `default` alone is the default list. Raises ValueError naming `where`, the bad entry and the valid names: an
    unknown name, one given twice (also through an alias), or an empty list."""
    raw = [part.strip() for part in value.split(",")] if isinstance(value, str) else list(value)
    if raw == [DEFAULT]:
        return DEFAULT_GOALS
    if not raw or any(not isinstance(name, str) for name in raw):
        raise ValueError(f"{where}: a goal list is one or more of {', '.join(NAMES)} (got {value!r})")
    goals: list[str] = []
    for name in raw:
        goal = ALIASES.get(name, name)
        if goal not in NAMES:
            raise ValueError(f"{where}: unknown goal {name!r}: one of {', '.join(NAMES)} "
                             f"({', '.join(f'{a} = {g}' for a, g in ALIASES.items())})")
        if goal in goals:
            raise ValueError(f"{where}: goal {goal!r} is named twice" + (f" (as {name!r})" if name != goal else ""))
        goals.append(goal)
    return tuple(goals)
