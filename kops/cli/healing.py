"""`kops rebalance --heal-after DURATION`: the options, the absences every run notes, and whether this run heals
(docs/design/healing.md). The planning is kops/planner/heal.py; this module only reads options and the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated

import typer

from kops.cli import console
from kops.cli.connection import Connection, open_cluster
from kops.cli.options import parse_option
from kops.cli.targets import cluster_address
from kops.cluster.port import Cluster
from kops.errors import NotReady
from kops.model.absence import Absence, absences, absent_brokers, described, due
from kops.model.desired import DesiredState
from kops.model.partitions import TopicPartition
from kops.model.plan import Plan
from kops.model.snapshot import Snapshot
from kops.planner.bounded import Request, readiness
from kops.planner.heal import heal, refusals
from kops.planner.planner import Policy
from kops.units import parse_duration

HealAfter = Annotated[str | None, typer.Option(
    "--heal-after", help="Re-create the replicas of a broker absent (not registered) this long, e.g. 30m, on live "
                         "brokers, racks and capacity kept, before any balancing (docs/design/healing.md).")]
HealMaxBrokers = Annotated[int, typer.Option(
    "--heal-max-brokers", help="Heal nothing while more brokers than this are absent (exit 3): a rack or half the "
                               "cluster gone is for people.", min=1)]


@dataclass(frozen=True)
class Heal:
    """How a run heals: after how long, and while at most how many brokers are absent."""

    after_seconds: float
    max_brokers: int = 1


def heal_of(heal_after: str | None, max_brokers: int) -> Heal | None:
    """The options as a `Heal`, None without --heal-after."""
    if heal_after is None:
        return None
    return Heal(parse_option(parse_duration, heal_after, "--heal-after"), max_brokers)


def note_absences(cluster: Cluster, snapshot: Snapshot) -> tuple[Absence, ...]:
    """Every run that reads the whole cluster notes which brokers are absent, so the first sighting is kept by
    the cluster for every host's cron (an incomplete snapshot could miss a broker's partitions: noted nothing)."""
    if not snapshot.complete:
        return ()
    first_seen, now_ms = cluster.records().note_absent(absent_brokers(snapshot))
    return absences(first_seen, now_ms)


@dataclass(frozen=True)
class Verdict:
    """Why not to go on (empty: go), and the absent brokers this run heals (empty: it balances)."""

    reasons: list[str]
    healing: tuple[int, ...] = ()


def verdict(snapshot: Snapshot, found: tuple[Absence, ...], heal: Heal | None) -> Verdict:
    """Heal when a broker is absent past the duration and healing may go on; else a rebalance's readiness, with
    how long each broker has been absent (and when it heals) where brokers are."""
    ready = due(found, heal.after_seconds) if heal is not None else ()
    if heal is not None and ready:
        return Verdict(refusals(snapshot, {a.broker for a in found}, heal.max_brokers),
                       tuple(a.broker for a in ready))
    reasons = readiness(snapshot)
    if found and reasons:
        reasons.append(described(found, heal.after_seconds if heal is not None else None)
                       + ("" if heal is not None else "; --heal-after re-homes their replicas"))
    return Verdict(reasons)


def offline_verdict(snapshot: Snapshot) -> Verdict:
    """An offline run (--snapshot) never heals: it cannot tell since when a broker is absent (that is kept in the
    cluster) nor note it. A rebalance's readiness, with the absent brokers said in one line."""
    reasons = readiness(snapshot)
    gone = sorted(absent_brokers(snapshot))
    if gone:
        reasons.append(f"broker(s) {', '.join(map(str, gone))} absent in the snapshot, not healed: an offline run "
                       f"(--snapshot) never heals, a run that reaches the cluster does (--heal-after)")
    return Verdict(reasons)


def healed_declared(desired: DesiredState, snapshot: Snapshot, connection: Connection | None,
                    sizes: dict[TopicPartition, int], policy: Policy) -> Plan | None:
    """`kops plan` of a playbook whose `rebalance:` section sets `heal_after`: the absent brokers noted in the
    cluster as every kops rebalance notes them and, once one has been absent that long, the healing plan
    (kops/planner/heal.py, as `kops rebalance --heal-after` plans it) in place of the playbook's, which the next
    plan makes on the healed cluster. None: plan the playbook. Offline (`connection` None) never heals."""
    declared = desired.rebalance
    if declared is None or declared.heal_after is None:
        return None
    if connection is None:
        gone = sorted(absent_brokers(snapshot))
        if gone:
            console.warning(f"broker(s) {', '.join(map(str, gone))} absent in the snapshot, not healed: an offline "
                            f"plan (--snapshot) never heals, a plan that reaches the cluster does")
        return None
    address = cluster_address(desired, connection)
    with open_cluster(connection, address) as cluster:
        found = note_absences(cluster, snapshot)
    judged = verdict(snapshot, found, Heal(declared.heal_after))
    if not judged.healing:
        if found:
            console.info(described(found, declared.heal_after))
        return None
    if judged.reasons:
        raise NotReady("not healing: " + "; ".join(judged.reasons), where=address.where,
                       hint="nothing was planned; the next plan tries again (docs/design/healing.md §3)")
    healing = heal(snapshot, judged.healing, Request(declared.goal), sizes, policy, desired.cluster,
                   desired.execution, balancing=False)
    note = (f"this plan only heals absent broker(s) {', '.join(map(str, healing.brokers))} (absent longer than "
            f"rebalance.heal_after, {declared.heal_after:g} s): plan again once it is applied for the playbook's "
            f"other changes")
    return replace(healing.plan, warnings=(*healing.plan.warnings, note))
