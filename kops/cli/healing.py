"""`kops rebalance --heal-after DURATION`: the options, the absences a healing run notes (a run without it writes
nothing), whether this run heals, and the line that says so (docs/design/healing.md). The planning is
kops/planner/heal.py; this module only reads options and the cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Annotated, Any, TypeVar

import typer

from kops.cli import console
from kops.cli.connection import Connection, open_cluster
from kops.cli.options import parse_option
from kops.cli.targets import cluster_address
from kops.cluster.port import Cluster
from kops.errors import ConnectionFailed, NotReady
from kops.model.absence import Absence, absences, absent_brokers, described, due
from kops.model.desired import DesiredState
from kops.model.partitions import KOPS_TOPIC, TopicPartition
from kops.model.plan import Plan
from kops.model.snapshot import ADMIN_API, Snapshot
from kops.planner.bounded import Rebalance, Request, readiness
from kops.planner.goal_rebalance import GoalRebalance
from kops.planner.heal import HEAL_REASON, heal, refusals, too_many
from kops.planner.planner import Policy
from kops.units import parse_duration

T = TypeVar("T")

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


@dataclass(frozen=True)
class Sighting:
    """What a run knows of the absent brokers: those it timed (noted in the cluster, which gives how long), the
    others by id, and why those were not timed (None: not asked to, a run without --heal-after)."""

    timed: tuple[Absence, ...] = ()
    untimed: tuple[int, ...] = ()
    unnoted: str | None = None

    @property
    def absent(self) -> frozenset[int]:
        return frozenset(a.broker for a in self.timed) | frozenset(self.untimed)

    def summary(self) -> list[dict[str, Any]]:
        """The JSON summary's `absent`: each broker with its seconds, null where the run did not time it."""
        found = [{"broker": a.broker, "seconds": round(a.seconds, 3)} for a in self.timed]
        return sorted(found + [{"broker": b, "seconds": None} for b in self.untimed], key=lambda a: a["broker"])


def unnoted(snapshot: Snapshot, why: str | None = None) -> Sighting:
    """The absent brokers of a run that notes nothing: one without --heal-after never writes (it never heals, and
    where the docs say a run writes nothing it writes nothing), so it cannot time them (docs/design/healing.md §1)."""
    return Sighting(untimed=tuple(sorted(absent_brokers(snapshot))), unnoted=why)


def note_absences(cluster: Cluster, snapshot: Snapshot) -> Sighting:
    """A healing run notes which brokers are absent, so the first sighting is kept by the cluster for every
    host's cron (an incomplete snapshot could miss a broker's partitions: noted nothing). A note the cluster
    cannot take because the partition of kops's own records is unhealthy (`bookkept`) is said, not raised: the
    run then refuses (exit 3), saying what is wrong with the cluster, as an unhealthy cluster is refused."""
    if not snapshot.complete:
        return unnoted(snapshot, "the cluster could not be read whole")
    refused = unwritable(snapshot)
    if refused is not None:
        return unnoted(snapshot, refused)
    noted, failure = bookkept(snapshot, lambda: cluster.records().note_absent(absent_brokers(snapshot)))
    if noted is None:
        return unnoted(snapshot, failure)
    return Sighting(absences(*noted))


def unwritable(snapshot: Snapshot) -> str | None:
    """Why kops's records would refuse a write now, as the snapshot shows them: through the Admin API they live in
    `__kops`, and Kafka takes no acks=all write where a partition has no leader or fewer in-sync replicas than its
    min.insync.replicas. Read first, a write there waited out the producer's timeout (30 s) before it failed."""
    topic = snapshot.topics.get(KOPS_TOPIC)
    if topic is None or not (snapshot.connect or "").startswith(ADMIN_API):
        return None  # not yet created (the write creates it), or the records live in ZooKeeper
    need = int(topic.config.get("min.insync.replicas") or 1)
    offline = set(snapshot.offline())
    for number, part in sorted(topic.partitions.items()):
        if TopicPartition(KOPS_TOPIC, number) in offline:
            return f"cannot write to {KOPS_TOPIC}: {KOPS_TOPIC}-{number} has no live leader"
        if part.state is not None and len(part.isr) < need:
            return (f"cannot write to {KOPS_TOPIC}: {KOPS_TOPIC}-{number} has {len(part.isr)} in-sync replica(s), "
                    f"below its min.insync.replicas {need}")
    return None


def bookkept(snapshot: Snapshot, call: Callable[[], T]) -> tuple[T | None, str | None]:
    """`call`, a read or write of kops's own records (the lock holder, the absence notes), and None; or, when it
    failed while the snapshot shows the partition those records live in (`__kops`) under-replicated or offline,
    None and why it failed. Kafka refuses acks=all writes below min.insync.replicas and reads without a leader:
    that is the cluster's health, which the run reports as a refusal; any other failure (authorization, an
    unreachable ZooKeeper) is an error and raised."""
    try:
        return call(), None
    except ConnectionFailed as exc:
        hurt = {tp.topic for tp in (*snapshot.offline(), *snapshot.under_replicated())}
        if KOPS_TOPIC not in hurt:
            raise
        return None, exc.what


@dataclass(frozen=True)
class Verdict:
    """Why not to go on (empty: go), and the absent brokers this run heals (empty: it balances)."""

    reasons: list[str]
    healing: tuple[int, ...] = ()


def verdict(snapshot: Snapshot, seen: Sighting, heal: Heal | None) -> Verdict:
    """Heal when a broker is absent past the duration and healing may go on; else a rebalance's readiness, with
    how long each broker has been absent (and when it heals), or why that is not known, where brokers are."""
    found = seen.timed
    ready = due(found, heal.after_seconds) if heal is not None else ()
    if heal is not None and ready:
        return Verdict(refusals(snapshot, seen.absent, heal.max_brokers), tuple(a.broker for a in ready))
    reasons = readiness(snapshot)
    if not reasons:
        return Verdict(reasons)
    crowd = too_many(seen.absent, heal.max_brokers) if heal is not None else None
    if crowd:
        reasons.append(crowd)
    if found:
        reasons.append(described(found, heal.after_seconds if heal is not None else None))
    gone = ", ".join(map(str, seen.untimed))
    if seen.untimed and heal is None:
        reasons.append(f"--heal-after re-homes the replicas of absent broker(s) {gone}")
    elif seen.untimed:
        reasons.append(f"broker(s) {gone} absent since a time kops could not note ({seen.unnoted}): not healing")
    return Verdict(reasons)


def healing_said(result: Rebalance | GoalRebalance, snapshot: Snapshot, seen: Sighting, heal: Heal,
                 brokers: tuple[int, ...]) -> str:
    """The line a healing run's text output says first: which absent brokers (`brokers`, those past the duration)
    for how long, and how many of their under-replicated partitions the plan gives a new replica, and how many
    wait for the next run."""
    since = {a.broker: f"{a.broker} (absent {a.seconds:.0f} s)" for a in seen.timed}
    healed = {m.tp for m in result.plan.moves if m.reason.startswith(HEAL_REASON)}
    absent = set(brokers)  # built once: the count reads every partition of the cluster
    waiting = sum(1 for name, topic in snapshot.topics.items() for p, part in topic.partitions.items()
                  if not absent.isdisjoint(part.replicas) and TopicPartition(name, p) not in healed)
    line = (f"healing absent broker{'s' if len(brokers) > 1 else ''} {', '.join(since.get(b, str(b)) for b in brokers)}"
            f", past --heal-after {heal.after_seconds:g} s: {len(healed)} under-replicated partition(s) get a new "
            f"replica on a live broker")
    if waiting:
        line += f"; {waiting} more wait for the next run (this run's limits are spent)"
    return line


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
        seen = note_absences(cluster, snapshot)
    judged = verdict(snapshot, seen, Heal(declared.heal_after))
    if not judged.healing:
        if seen.timed:
            console.info(described(seen.timed, declared.heal_after))
        if seen.untimed:
            console.warning(f"broker(s) {', '.join(map(str, seen.untimed))} absent since a time kops could not "
                            f"note ({seen.unnoted}), not healed: the playbook is planned as it stands")
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
