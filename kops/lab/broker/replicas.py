"""The broker's replicas: what the controller told it, what its leaders tell it, and what it tells followers.

Leader side (`handle_fetch`): a follower's fetch offset is its log end; a follower that reached the high
watermark joins the ISR, one that has not caught up with the log end for `lag_max` simulated seconds leaves
it; bytes sent to followers outside the ISR count against the leader throttle when the leader list names the
partition. Follower side (`fetch_plan` / `apply_fetch`): what to ask each leader for, limited by the broker's
bandwidth and, while out of sync, by the follower throttle. ISR changes are queued here and written by the
broker's ISR writer (state znode with version check, then an `isr_change_` notification).

Every append (a produce, ingest, a follower's copy, a clone's seeding) goes through the log dir's disk
(`kops.lab.broker.disk`): one that does not fit fails the dir, and with it every replica (KIP-112).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from kops.lab.broker.clock import SimClock
from kops.lab.broker.disk import STORAGE_ERROR, LogDirDisk
from kops.lab.broker.quotas import RateLimiter
from kops.lab.broker.simlog import SimulatedLog
from kops.lab.broker.throttles import Throttles
from kops.lab.controller.effects import LeaderAndIsrEntry
from kops.lab.controller.wire import BrokerAddress, ControllerBatch
from kops.model.partitioner import key_shares
from kops.model.partitions import NO_LEADER, TopicPartition
from kops.rpc import RpcError

DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000
FIRST_FETCH_BYTES = 1 << 40  # a follower that does not know the leader's log end asks for "everything"
# Real seconds a caught-up follower's fetch may wait at the leader (replica.fetch.wait.max.ms). A follower that is
# given a partition of that leader wakes its parked fetch (`wake_fetch`), so the wait never delays a new replica.
MAX_FETCH_WAIT = 1.0


@dataclass
class FollowerProgress:
    leo: int = 0
    caught_up_at: float = 0.0
    fetched_at: float | None = None  # when the follower last fetched (its `leo` is as of then)
    end_at_last_fetch: int = 0  # the leader's log end when the follower last fetched


@dataclass
class Replica:
    """A partition on this broker. `state` is the controller's last LeaderAndIsr for it (leader, epoch, ISR,
    replicas, state-znode version), its ISR and version moved on by the ISR changes this broker writes as leader."""

    state: LeaderAndIsrEntry
    controller_epoch: int
    created_at: float
    log: SimulatedLog = field(default_factory=SimulatedLog)
    online: bool = True
    followers: dict[int, FollowerProgress] = field(default_factory=dict)
    leader_end: int | None = None  # follower: the leader's log end as of the last fetch
    leader_growth: int = 0  # follower: how much the leader's log grew between the last two fetches
    in_sync: bool = False  # follower: the leader counts it in the ISR
    caught_up_at: float | None = None  # follower: first time it reached the leader's log end
    fetch_error: str | None = None
    last_ingest: float | None = None


@dataclass(frozen=True)
class IsrUpdate:
    tp: TopicPartition
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    zk_version: int


class ReplicaManager:
    def __init__(self, broker_id: int, clock: SimClock, bandwidth: float | None = None, lag_max: float = 30.0,
                 burst_seconds: float = 1.0, disk: LogDirDisk | None = None) -> None:
        self.broker_id = broker_id
        self.disk = disk or LogDirDisk(f"/kops-lab/broker-{broker_id}/data")
        # called (under `lock`) once, when the dir fails: the broker stops as Kafka's does (disk.py)
        self.on_dir_failure: Callable[[str], None] | None = None
        self.clock = clock
        self.lag_max = lag_max
        self.lock = threading.RLock()
        # per follower, its parked fetch's condition (all on `lock`): a led log grew, its ISR or high watermark
        # moved or leadership moved, and only the fetches of that partition's replicas wake (on a 50-broker
        # clone, one condition for all woke 49 parked fetches at every append, each answering again)
        self.parked: dict[int, threading.Condition] = {}
        self.replicas: dict[TopicPartition, Replica] = {}
        self.controller_epoch = 0
        self.brokers: dict[int, BrokerAddress] = {}
        self.throttles = Throttles(broker_id)
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.leader_quota = RateLimiter(None, burst_seconds)
        self.follower_quota = RateLimiter(None, burst_seconds)
        self.bandwidth_out = RateLimiter(bandwidth, burst_seconds)
        self.bandwidth_in = RateLimiter(bandwidth, burst_seconds)
        self.ingest: dict[str, float] = {}  # topic -> bytes per simulated second, whole topic (keyed, see below)
        self.topic_counts: dict[str, tuple[int, int]] = {}  # KIP-253 (initial, undeleted), from LeaderAndIsr
        self.pending_isr: dict[TopicPartition, tuple[int, ...]] = {}
        self.leading: set[TopicPartition] = set()  # online replicas this broker leads
        # online replicas this broker follows, by leader: a fetcher's round reads only its own leader's (on a
        # clone of 24 brokers, scanning every replica for each of 23 fetchers ten times a second was the load)
        self.followed: dict[int, set[TopicPartition]] = {}
        # follower side: per leader, bumped when this broker starts following one of its partitions; leaders
        # to wake (their parked fetch does not name the new partition). Leader side: the newest generation each
        # follower announced; a parked fetch of an older one answers at once.
        self.follow_generation: dict[int, int] = {}
        self.gained: set[int] = set()
        self.announced: dict[int, int] = {}

    # -- controller requests -----------------------------------------------------------------------------

    def handle_controller_batch(self, batch: ControllerBatch) -> dict[str, Any]:
        with self.lock:
            moved: set[int] = set()
            if batch.controller_epoch < self.controller_epoch:
                raise RpcError(f"stale controller epoch {batch.controller_epoch} from controller "
                               f"{batch.controller_id}; broker {self.broker_id} has seen {self.controller_epoch}")
            self.controller_epoch = batch.controller_epoch
            if batch.brokers is not None:
                self.brokers = batch.brokers
            self.topic_counts.update(batch.topic_counts)
            now = self.clock.now()
            ignored, storage_errors = [], []
            for e in batch.leader_and_isr:
                if self.broker_id not in e.replicas:
                    continue
                if not self.disk.online:  # KAFKA_STORAGE_ERROR: its dir is offline, the replica stays so
                    storage_errors.append(str(e.tp))
                    continue
                r = self.replicas.get(e.tp)
                if r is not None and r.online and (e.leader_epoch, e.zk_version) <= (r.state.leader_epoch,
                                                                                     r.state.zk_version):
                    if e.leader_epoch < r.state.leader_epoch:
                        ignored.append(str(e.tp))
                    continue
                moved.update(e.replicas, r.state.replicas if r is not None else ())
                self._become(r, e, batch.controller_epoch, now)
            for tp, delete in batch.stop_replica:
                r = self.replicas.get(tp)
                if r is None:
                    continue
                moved.update(r.state.replicas)
                if delete:
                    del self.replicas[tp]
                else:
                    r.online = False
                self.pending_isr.pop(tp, None)
                self.leading.discard(tp)
                self._unfollow(tp, r.state.leader)
            self._wake(moved)  # fetches parked on a partition that moved answer now
            return {"stale_partitions": ignored, "storage_errors": storage_errors}

    def _become(self, r: Replica | None, e: LeaderAndIsrEntry, controller_epoch: int, now: float) -> None:
        tp, leader, replicas = e.tp, e.leader, e.replicas
        if r is None:
            r = self.replicas[tp] = Replica(e, controller_epoch, now)
        was_leader = r.state.leader == self.broker_id and r.online
        self._unfollow(tp, r.state.leader)
        if leader not in (self.broker_id, NO_LEADER):
            self._follow(tp, leader)
        r.state, r.controller_epoch, r.online = e, controller_epoch, True
        r.fetch_error = None
        self.pending_isr.pop(tp, None)
        if leader == self.broker_id:
            self.leading.add(tp)
            if not was_leader:  # a new leader gives every follower a full lag window (Kafka resets these too)
                r.followers = {b: FollowerProgress(0, now) for b in replicas if b != self.broker_id}
                r.last_ingest = now
            else:
                r.followers = {b: r.followers.get(b, FollowerProgress(0, now)) for b in replicas
                               if b != self.broker_id}
            self._update_hw(r)
        else:
            self.leading.discard(tp)
            r.followers = {}
            r.in_sync = self.broker_id in r.state.isr
            if r.log.end > r.log.hw:  # a follower truncates to its high watermark before fetching
                r.log.end = max(r.log.hw, r.log.start)

    def _follow(self, tp: TopicPartition, leader: int) -> None:
        followed = self.followed.setdefault(leader, set())
        if tp not in followed:
            followed.add(tp)
            self.follow_generation[leader] = self.follow_generation.get(leader, 0) + 1
            self.gained.add(leader)

    def take_gained(self) -> dict[int, int]:
        """Leaders this broker started following partitions of since the last call, with their generation."""
        with self.lock:
            gained = {leader: self.follow_generation[leader] for leader in self.gained if leader in self.followed}
            self.gained.clear()
            return gained

    def _unfollow(self, tp: TopicPartition, leader: int) -> None:
        followed = self.followed.get(leader)
        if followed is not None:
            followed.discard(tp)
            if not followed:
                del self.followed[leader]

    # -- leader side -------------------------------------------------------------------------------------

    def _update_hw(self, r: Replica) -> None:
        before = r.log.hw
        ends = [r.log.end] + [f.leo for b, f in r.followers.items() if b in r.state.isr]
        r.log.hw = max(r.log.hw, min(ends)) if ends else r.log.end
        r.log.hw = min(r.log.hw, r.log.end)
        if r.log.hw != before:
            self._wake(r.followers)

    def _wake(self, brokers: Iterable[int]) -> None:
        """Answer the parked fetches of `brokers` (their partitions changed here)."""
        for b in brokers:
            parked = self.parked.get(b)
            if parked is not None:
                parked.notify_all()

    def handle_fetch(self, body: dict[str, Any]) -> dict[str, Any]:
        """A follower's fetch. One already at the log end of every partition and in their ISRs waits here, up to
        `max_wait` real seconds (bounded so its ISR membership never lapses), for an append, a leadership change
        or the follower's word that it follows more partitions here (`wake_fetch`), instead of asking again and
        again (Kafka's fetch purgatory does the same)."""
        replica_id = int(body["replica_id"])
        generation = int(body.get("generation", 0))
        wait = min(float(body.get("max_wait", 0.0)), self.fetch_wait, self.lag_max / self.clock.scale / 4)
        deadline = time.monotonic() + wait
        with self.lock:
            first, idle = self._answer_fetch(replica_id, body["partitions"])
            out, waited = first, False
            while idle and self.announced.get(replica_id, 0) <= generation \
                    and (remaining := deadline - time.monotonic()) > 0:
                self._parked(replica_id).wait(remaining)
                out, idle = self._answer_fetch(replica_id, body["partitions"])
                idle, waited = idle and out == first, True
            return {"partitions": out, "waited": waited}

    @property
    def fetch_wait(self) -> float:
        """Real seconds a caught-up follower's fetch may wait here (stretched in slow motion, `SimClock.stretch`)."""
        return MAX_FETCH_WAIT * self.clock.stretch

    def _parked(self, replica_id: int) -> threading.Condition:
        parked = self.parked.get(replica_id)
        if parked is None:
            parked = self.parked[replica_id] = threading.Condition(self.lock)
        return parked

    def wake_fetch(self, body: dict[str, Any]) -> dict[str, Any]:
        """A follower follows more of this leader's partitions than its parked fetch names: answer it now."""
        with self.lock:
            replica_id = int(body["replica_id"])
            self.announced[replica_id] = max(self.announced.get(replica_id, 0), int(body["generation"]))
            self._wake((replica_id,))
        return {}

    def _answer_fetch(self, replica_id: int, partitions: list[list[Any]]) -> tuple[list[list[Any]], bool]:
        """The answer for each partition, and whether the follower is idle (nothing to send, in every ISR)."""
        now = self.clock.now()
        out: list[list[Any]] = []
        idle = True
        for topic, p, offset, epoch, max_bytes in partitions:
            tp = TopicPartition(topic, int(p))
            r = self.replicas.get(tp)
            if r is None or not r.online or r.state.leader != self.broker_id:
                out.append([topic, p, "not_leader"])
                continue
            if epoch != r.state.leader_epoch:
                stale = epoch < r.state.leader_epoch
                out.append([topic, p, "fenced_leader_epoch" if stale else "unknown_leader_epoch"])
                continue
            if offset < r.log.start or offset > r.log.end:
                out.append([topic, p, "out_of_range", r.log.start, r.log.end])
                continue
            f = r.followers.get(replica_id)
            if f is None:
                out.append([topic, p, "not_a_replica"])
                continue
            _note_fetch(f, offset, r.log.end, now)
            isr = self.pending_isr.get(tp, r.state.isr)
            if replica_id not in isr and offset >= r.log.hw:
                self.pending_isr[tp] = tuple(isr) + (replica_id,)
            in_sync = replica_id in r.state.isr
            grant = min(int(max_bytes), r.log.end - offset)
            if grant > 0 and not in_sync and self.throttles.leader_throttled(topic, tp.partition):
                grant = self.leader_quota.take(grant, now)
            grant = self.bandwidth_out.take(grant, now)
            self._update_hw(r)
            idle = idle and in_sync and offset >= r.log.end
            out.append([topic, p, "ok", grant, r.log.end, r.log.hw, r.log.start, in_sync])
        return out, idle and not any(entry[2] != "ok" for entry in out)

    def append(self, tp: TopicPartition, count: int) -> int:
        with self.lock:
            r = self.replicas.get(tp)
            if r is None or not r.online or r.state.leader != self.broker_id:
                raise RpcError(f"broker {self.broker_id} is not the leader of {tp}")
            counts = self.topic_counts.get(tp.topic)
            if counts is not None and tp.partition >= counts[1]:  # KIP-253 InvalidPartitionMetadata
                raise RpcError(f"{tp} is marked for deletion (undeleted_partition_count {counts[1]}): "
                               f"producers no longer write to it")
            if self._write(r, count, self._held(), self.clock.now(), f"a produce to {tp}") is None:
                raise RpcError(f"{STORAGE_ERROR}: the log dir of {tp} on broker {self.broker_id} is offline "
                               f"({self.disk.failure})")
            self._update_hw(r)
            self._wake(r.followers)
            return r.log.end

    def seed_followers(self, entries: list[list[Any]]) -> list[list[Any]]:
        """Extend follower replicas' logs to their leaders' ends ([topic, partition, end]) as if fetched: a
        clone's followers start in sync. Entries this broker does not follow come back (missing)."""
        now = self.clock.now()
        missing: list[list[Any]] = []
        with self.lock:
            held: int | None = self._held()
            for topic, p, end in entries:
                r = self.replicas.get(TopicPartition(str(topic), int(p)))
                if held is None or r is None or not r.online or r.state.leader == self.broker_id:
                    missing.append([topic, p])
                    continue
                held = self._write(r, int(end) - r.log.end, held, now, f"seeding {r.state.tp}")
                r.leader_end = max(r.leader_end or 0, int(end))
        return missing

    def tick(self, retention: bool = True, isr: bool = True) -> None:
        """Ingest at every tick; ISR shrink for lagging followers and retention when asked (less often).

        Only partitions this broker leads need the ISR check, and only those with ingest need work at every tick:
        on a clone of 24 brokers, checking every led partition's followers twenty times a second was most of the
        brokers' time (Kafka's ISR expiration runs every replica.lag.time.max.ms / 2).
        """
        now = self.clock.now()
        with self.lock:
            if retention:
                self._apply_retention(now)
            grew = self._ingest_tick(now)
            if isr:
                self._shrink_lagging(now)
            self._wake(grew)

    def _apply_retention(self, now: float) -> None:
        for tp, r in self.replicas.items():
            if r.online:
                config = self.topic_configs.get(tp.topic, {})
                retention_ms = _int(config.get("retention.ms"), DEFAULT_RETENTION_MS)
                r.log.apply_retention(now, retention_ms, _int(config.get("retention.bytes"), -1))

    def _ingest_tick(self, now: float) -> set[int]:
        """Append each led partition's share of its topic's ingest since the last tick; the followers of the
        logs that grew."""
        grew: set[int] = set()
        held = self._held() if self.ingest else 0
        for tp in list(self.leading):  # a full disk empties `leading` on the way
            r = self.replicas[tp]
            rate = self._ingest_rate(tp) if self.ingest else 0.0
            if rate and r.last_ingest is not None:
                written = self._write(r, int(rate * (now - r.last_ingest)), held, now, f"ingest into {tp}")
                if written is None:
                    return grew
                held = written
                self._update_hw(r)
                grew.update(r.followers)
            r.last_ingest = now
        return grew

    def _shrink_lagging(self, now: float) -> None:
        for tp in self.leading:
            r = self.replicas[tp]
            if len(r.state.isr) > 1 and tp not in self.pending_isr:
                lagging = [b for b in r.state.isr if b != self.broker_id and b in r.followers
                           and now - r.followers[b].caught_up_at > self.lag_max]
                if lagging:
                    self.pending_isr[tp] = tuple(b for b in r.state.isr if b not in lagging)

    def _ingest_rate(self, tp: TopicPartition) -> float:
        """This partition's share of its topic's keyed ingest: keys spread by KIP-253 linear hashing, so a
        partition marked for deletion (>= undeleted count) gets nothing and a split one half of its bucket."""
        total = self.ingest.get(tp.topic)
        counts = self.topic_counts.get(tp.topic)
        if not total or counts is None or tp.partition >= counts[1]:
            return 0.0
        return total * key_shares(*counts)[tp.partition]

    def log_offsets(self, body: dict[str, Any]) -> dict[str, Any]:
        """ListOffsets for the controller's drain check: log start and end of the named partitions led here."""
        out = []
        with self.lock:
            for topic, p in body.get("partitions", []):
                r = self.replicas.get(TopicPartition(str(topic), int(p)))
                if r is not None and r.online and r.state.leader == self.broker_id:
                    out.append([topic, p, r.log.start, r.log.end])
        return {"offsets": out}

    def follower_lag(self, tp: TopicPartition, broker: int) -> tuple[int, float] | str:
        """KIP-179 ReplicaStatus at the leader: (bytes `broker` is behind, simulated seconds since that was
        measured), or "not_leader" / "not_replica". A follower that has not fetched yet lags by the whole log."""
        with self.lock:
            r = self.replicas.get(tp)
            if r is None or not r.online or r.state.leader != self.broker_id:
                return "not_leader"
            if broker == self.broker_id:
                return 0, 0.0
            f = r.followers.get(broker)
            if f is None or broker not in r.state.replicas:
                return "not_replica"
            if f.fetched_at is None:
                return r.log.size, 0.0
            return max(0, r.log.end - max(f.leo, r.log.start)), max(0.0, self.clock.now() - f.fetched_at)

    def take_isr_updates(self) -> list[IsrUpdate]:
        with self.lock:
            updates = []
            for tp, isr in sorted(self.pending_isr.items()):
                r = self.replicas.get(tp)
                if r is not None and r.online and r.state.leader == self.broker_id and isr != r.state.isr:
                    updates.append(IsrUpdate(tp, r.state.leader, r.state.leader_epoch, isr, r.controller_epoch,
                                             r.state.zk_version))
            self.pending_isr.clear()
            return updates

    def isr_written(self, update: IsrUpdate, new_version: int) -> None:
        with self.lock:
            r = self.replicas.get(update.tp)
            if r is not None and (r.state.leader_epoch, r.state.zk_version) == (update.leader_epoch, update.zk_version):
                r.state = replace(r.state, isr=update.isr, zk_version=new_version)
                self._update_hw(r)
                self._wake(r.followers)

    # -- follower side -----------------------------------------------------------------------------------

    def leaders_followed(self) -> set[int]:
        with self.lock:
            return set(self.followed)

    def fetch_plan(self, leader: int) -> tuple[list[list[Any]], int]:
        """[topic, partition, fetch offset, leader epoch, max bytes] for every partition followed from `leader`,
        and the follow generation the plan is as new as (`wake_fetch`)."""
        now = self.clock.now()
        plan: list[list[Any]] = []
        with self.lock:
            for tp in sorted(self.followed.get(leader, ())):
                r = self.replicas[tp]
                wanted = _wanted(r)
                if wanted and not r.in_sync and self.throttles.follower_throttled(tp.topic, tp.partition):
                    wanted = self.follower_quota.take(wanted, now)
                wanted = self.bandwidth_in.take(wanted, now)
                plan.append([tp.topic, tp.partition, r.log.end, r.state.leader_epoch, wanted])
            return plan, self.follow_generation.get(leader, 0)

    def apply_fetch(self, request: list[list[Any]], reply: dict[str, Any]) -> int:
        """Apply a leader's answer; the bytes received. Unused grants go back to the limiters."""
        now = self.clock.now()
        asked = {(t, int(p)): int(m) for t, p, _o, _e, m in request}
        received = 0
        with self.lock:
            held = self._held()
            for entry in reply.get("partitions", []):
                topic, p, status = entry[0], int(entry[1]), entry[2]
                tp = TopicPartition(topic, p)
                r = self.replicas.get(tp)
                wanted = asked.get((topic, p), 0)
                if r is None or not r.online:
                    self._give_back(tp, r, wanted)
                    continue
                if status == "out_of_range":
                    start, end = int(entry[3]), int(entry[4])
                    if r.log.end > end:  # diverged after a leader change: truncate to the leader's end
                        r.log.end = max(end, r.log.start)
                        r.log.hw = min(r.log.hw, r.log.end)
                    if r.log.end < start:  # the leader no longer has what we need: start over from its start
                        r.log.reset_to(start)
                    self._give_back(tp, r, wanted)
                    continue
                if status != "ok":
                    r.fetch_error = status
                    self._give_back(tp, r, wanted)
                    continue
                grant, leader_end, hw, start = int(entry[3]), int(entry[4]), int(entry[5]), int(entry[6])
                in_sync = bool(entry[7])
                self._give_back(tp, r, wanted - grant)
                r.fetch_error = None
                written = self._write(r, grant, held, now, f"the fetch of {tp} from broker {r.state.leader}")
                if written is None:
                    return received
                held = written
                r.log.hw = min(hw, r.log.end)
                r.log.advance_start(start)
                r.leader_growth = max(0, leader_end - r.leader_end) if r.leader_end is not None else 0
                r.leader_end, r.in_sync = leader_end, in_sync
                if r.caught_up_at is None and r.log.end >= leader_end:
                    r.caught_up_at = now
                received += grant
        return received

    def _give_back(self, tp: TopicPartition, r: Replica | None, unused: int) -> None:
        if unused <= 0 or unused >= FIRST_FETCH_BYTES // 2:
            return
        self.bandwidth_in.give_back(unused)
        if r is not None and not r.in_sync and self.throttles.follower_throttled(tp.topic, tp.partition):
            self.follower_quota.give_back(unused)

    # -- the log dir (KIP-112) ----------------------------------------------------------------------------

    def held_bytes(self) -> int:
        """What the dir holds: every replica's log, stopped ones too (a stopped replica keeps its files)."""
        with self.lock:
            return sum(r.log.size for r in self.replicas.values())

    def _held(self) -> int:
        """Held bytes for the checks of one operation; 0 without a capacity (nothing to count, at any scale)."""
        return 0 if self.disk.capacity is None else self.held_bytes()

    def _write(self, r: Replica, count: int, held: int, now: float, what: str) -> int | None:
        """Append `count` bytes to `r` if the disk has room: what the dir then holds; None when it failed."""
        if count > 0 and not self.disk.fits(held, count):
            self._fail_dir(self.disk.no_space(held, count, what))
            return None
        r.log.append(count, now)
        return held + max(0, count)

    def _fail_dir(self, why: str) -> None:
        """KIP-112 (Kafka's ReplicaManager.handleLogDirFailure): every replica in the dir goes offline, its
        fetchers stop, its parked fetches answer (not_leader from now on), and the broker is told."""
        if not self.disk.online:
            return
        self.disk.failure = why
        for r in self.replicas.values():
            r.online = False
        self.leading.clear()
        self.followed.clear()
        self.pending_isr.clear()
        self._wake(list(self.parked))
        if self.on_dir_failure is not None:
            self.on_dir_failure(why)

    # -- views -------------------------------------------------------------------------------------------

    def status(self) -> list[list[Any]]:
        with self.lock:
            return [[tp.topic, tp.partition, "leader" if r.state.leader == self.broker_id else "follower", r.online,
                     r.log.start, r.log.end, r.log.hw, r.state.leader, r.state.leader_epoch, list(r.state.isr),
                     r.created_at, r.caught_up_at, r.fetch_error]
                    for tp, r in sorted(self.replicas.items())]

    def log_dir(self) -> tuple[LogDirDisk, int, list[tuple[TopicPartition, int, int]]]:
        """The dir, what it holds and every replica's (partition, size, offset lag), read at one instant (so
        usable bytes = capacity − the sizes listed, exactly)."""
        with self.lock:
            sizes = self.sizes()
            return self.disk, sum(size for _tp, size, _lag in sizes), sizes

    def sizes(self) -> list[tuple[TopicPartition, int, int]]:
        """(partition, size, offset lag) of every replica, for log-dir snapshots."""
        with self.lock:
            return [(tp, r.log.size,
                     0 if r.state.leader == self.broker_id else max(0, (r.leader_end or r.log.end) - r.log.end))
                    for tp, r in sorted(self.replicas.items())]


def _wanted(r: Replica) -> int:
    """What a follower asks its leader for: the gap it knows of, plus what the leader wrote during the last
    fetch round. A Kafka follower asks for everything up to the leader's end *now*; one that asked only for
    the gap seen at its previous fetch would stay a round behind a growing log and never count as caught up
    (unused bytes go back to the limiters, so the extra costs nothing)."""
    return max(0, r.leader_end - r.log.end) + r.leader_growth if r.leader_end is not None else FIRST_FETCH_BYTES


def _note_fetch(f: FollowerProgress, offset: int, leader_end: int, now: float) -> None:
    """Kafka's caught-up rule (Replica.updateFetchState): a fetch at the log end is caught up now; a fetch at
    the end the log had at the follower's previous fetch proves it was caught up then. Without the second
    half, a follower of a partition that grows between every two fetches would never count as caught up and
    would leave the ISR however fast it fetches."""
    if offset >= leader_end:
        f.caught_up_at = max(f.caught_up_at, now)
    elif f.fetched_at is not None and offset >= f.end_at_last_fetch:
        f.caught_up_at = max(f.caught_up_at, f.fetched_at)
    f.leo, f.fetched_at, f.end_at_last_fetch = offset, now, leader_end


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default
