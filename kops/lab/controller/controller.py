"""The controller inside every lab broker: election, failover, and one handler per event (seeds 002, 004).

Flow of one event: a watch fires and enqueues it (nothing else happens on kazoo's thread); the event thread
reads what it needs from ZooKeeper, calls the pure decision in `decisions`, then `_apply`s the effects in
order: ZooKeeper writes (fenced multi-ops), memory, one batched request per broker, and finally bookkeeping
znodes (reassignment entries done, notifications consumed). A version conflict on a state znode (a leader's
ISR write raced with us) re-reads those partitions and decides again.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from kops.errors import ZnodeFormatError
from kops.lab.controller import decisions, partition_counts
from kops.lab.controller.channel import BrokerChannel, Reply, wait
from kops.lab.controller.context import ControllerContext
from kops.lab.controller.effects import Effects, apply_to_memory, restrict
from kops.lab.controller.eventloop import EventLoop
from kops.lab.controller.events import (
    BrokerChange,
    CancelRequested,
    ControlledShutdown,
    ControllerChange,
    DrainCheck,
    Event,
    Expire,
    FreezeChanged,
    IsrChanged,
    PartitionModifications,
    PreferredElectionRequested,
    QueueChanged,
    ReassignmentRequested,
    Reelect,
    ReplicasDeleted,
    Startup,
    TopicChange,
    TopicDeletion,
)
from kops.lab.controller.store import ControllerMoved, ControllerStore, StateConflict
from kops.lab.controller.wire import BrokerAddress
from kops.model.brokers import Broker
from kops.model.partitions import TopicPartition
from kops.zk_layout import paths
from kops.zk_layout.client import Node, ZkClient
from kops.zk_layout.codecs.brokers import decode_broker
from kops.zk_layout.codecs.configs import decode_config

log = logging.getLogger(__name__)
state_change_log = logging.getLogger("kops.state_change")

MAX_CONFLICT_RETRIES = 10
LOG_OFFSETS = "log_offsets"  # the brokers' ListOffsets: [topic, partition, log start, log end] for partitions led


UNCLEAN = "unclean.leader.election.enable"


def _config_of(node: Node | None) -> dict[str, str]:
    if node is None:
        return {}
    try:
        return decode_config(node.data, "config")
    except ZnodeFormatError:
        return {}  # Kafka would not read it either: the default applies


def _address(broker: Broker) -> BrokerAddress:
    return BrokerAddress(broker.id, broker.host or "127.0.0.1", broker.port, broker.rack)


class Controller:
    def __init__(self, broker_id: int, client: ZkClient, on_session_lost: Callable[[], None] | None = None,
                 drain_check_seconds: float = 1.0) -> None:
        self.broker_id = broker_id
        self.drain_check_seconds = drain_check_seconds
        self._stopped = threading.Event()
        self.client = client
        self.store = ControllerStore(client)
        self.channel = BrokerChannel()
        self.loop: EventLoop[Event] = EventLoop(self._process, on_failure=self._failed)
        self.ctx: ControllerContext | None = None
        self.epoch_version = -1
        self.active_id: int | None = None
        self.on_session_lost = on_session_lost
        self._generation = 0
        self._reassign_czxid: int | None = None
        self._watched_topics: set[str] = set()
        self._deletions_sent: set[str] = set()

    # -- lifecycle ---------------------------------------------------------------------------------------

    def start(self) -> Controller:
        self.loop.start()
        self.client.add_state_listener(self._session_state)
        self.loop.put(Startup())
        self.client.watch_data(paths.CONTROLLER, self._controller_znode)
        threading.Thread(target=self._drain_timer, name="controller-drain-timer", daemon=True).start()
        return self

    def _drain_timer(self) -> None:
        """KIP-253: while partitions are marked for deletion, check every few seconds whether they drained."""
        while not self._stopped.wait(self.drain_check_seconds):
            ctx = self.ctx
            if ctx is not None and ctx.marked:
                self.loop.put(DrainCheck())

    def stop(self) -> None:
        self._stopped.set()
        self.loop.stop()
        self._resign("broker stopping")
        self.channel.close()

    @property
    def is_active(self) -> bool:
        return self.ctx is not None

    def _session_state(self, state: str) -> None:
        if state == "lost":
            dropped = self.loop.clear()
            log.warning("ZooKeeper session lost: %d queued controller events dropped", dropped)
            self.loop.put(Expire())

    def _controller_znode(self, node: Node | None) -> None:
        self.loop.put(Reelect() if node is None else ControllerChange())

    def _watch(self, event_for: Callable[..., Event]) -> Callable[[Any], Any]:
        """A watch callback that enqueues while this controller term lasts and unregisters itself after."""
        generation = self._generation

        def callback(_value: Any) -> Any:
            if generation != self._generation:
                return False
            self.loop.put(event_for())
            return None

        return callback

    # -- event dispatch ----------------------------------------------------------------------------------

    def _process(self, event: Event) -> None:
        """Election events always; the rest only while this broker is the active controller."""
        if isinstance(event, (Startup, Reelect)):
            self._elect()
        elif isinstance(event, ControllerChange):
            self._maybe_resign()
        elif isinstance(event, Expire):
            self._resign("session expired")
            if self.on_session_lost is not None:
                self.on_session_lost()
            self._elect()
        elif self.ctx is None:
            if isinstance(event, ControlledShutdown):
                event.reply.set_exception(RuntimeError(f"broker {self.broker_id} is not the controller"))
        else:
            handler = self._handlers.get(type(event))
            if handler is not None:
                handler(event)

    @property
    def _handlers(self) -> dict[type, Callable[[Any], None]]:
        return {
            BrokerChange: lambda _e: self._broker_change(),
            TopicChange: lambda _e: self._topic_change(),
            PartitionModifications: lambda e: self._partition_modifications(e.topic),
            TopicDeletion: lambda _e: self._topic_deletion(),
            ReplicasDeleted: self._replicas_deleted,
            ReassignmentRequested: lambda _e: self._reassignment(),
            PreferredElectionRequested: lambda _e: self._preferred_election(),
            CancelRequested: lambda _e: self._cancel(),
            FreezeChanged: lambda _e: self._freeze(),
            QueueChanged: lambda _e: self._queue(),
            IsrChanged: lambda _e: self._isr_changed(),
            ControlledShutdown: self._controlled_shutdown,
            DrainCheck: lambda _e: self._drain_check(),
        }

    def _replicas_deleted(self, event: ReplicasDeleted) -> None:
        self._decide(lambda ctx: decisions.on_replicas_deleted(ctx, event.topic))
        self.store.delete_quietly(paths.delete_topic(event.topic))
        self._deletions_sent.discard(event.topic)

    def _failed(self, event: Event, exc: Exception) -> None:
        if isinstance(event, ControlledShutdown) and not event.reply.done():
            event.reply.set_exception(exc)

    # -- election ----------------------------------------------------------------------------------------

    def _elect(self) -> None:
        self._maybe_resign()
        active = self.store.active_controller()
        if active is not None:
            self.active_id = active
            return
        registered = self.store.register_controller(self.broker_id)
        if registered is None:
            self.active_id = self.store.active_controller()
            return
        epoch, epoch_version = registered
        self.active_id = self.broker_id
        self._failover(epoch, epoch_version)

    def _maybe_resign(self) -> None:
        active = self.store.active_controller()
        self.active_id = active
        if self.ctx is not None and active != self.broker_id:
            self._resign(f"broker {active} is controller now")

    def _resign(self, why: str) -> None:
        if self.ctx is None:
            return
        state_change_log.info("[controller %d epoch %d] resigning: %s", self.broker_id, self.ctx.epoch, why)
        self._generation += 1  # every watch of this term unregisters itself on its next firing
        self.ctx = None
        self._watched_topics.clear()
        self._deletions_sent.clear()
        self._reassign_czxid = None

    def _failover(self, epoch: int, epoch_version: int) -> None:
        """Read everything, resend state, resume what was in progress; then watch for what comes next."""
        ctx, view = self.store.load(self.broker_id, epoch)
        for problem in view.bad_znodes:
            log.warning("failover: ignoring %s", problem)
        self.ctx, self.epoch_version = ctx, epoch_version
        self.channel.set_brokers({b: _address(br) for b, br in view.brokers.items()})
        state_change_log.info("[controller %d epoch %d] became controller: %d brokers, %d partitions",
                              self.broker_id, epoch, len(ctx.live), len(ctx.assignments))
        self._generation += 1
        self._refresh_unclean({tp.topic for tp, st in ctx.states.items() if st.leader not in ctx.live_ids()})
        self._decide(decisions.on_failover)
        self._decide(partition_counts.settle)
        reassigning = sorted(tp for tp, a in ctx.assignments.items() if a.reassigning)
        if reassigning:
            self._decide(lambda c: decisions.maybe_complete_reassignments(c, reassigning))
        # Registering a watch reports the current value at once: pending deletions, reassignments, elections
        # and ISR notifications left by the previous controller are enqueued here and handled next.
        client = self.client
        client.watch_children(paths.BROKER_IDS, self._watch(BrokerChange))
        client.watch_children(paths.BROKER_TOPICS, self._watch(TopicChange))
        client.watch_children(paths.DELETE_TOPICS, self._watch(TopicDeletion))
        client.watch_children(paths.ISR_CHANGE_NOTIFICATION, self._watch(IsrChanged))
        client.watch_data(paths.REASSIGN_PARTITIONS, self._watch(ReassignmentRequested))
        client.watch_data(paths.PREFERRED_REPLICA_ELECTION, self._watch(PreferredElectionRequested))
        client.watch_data(paths.REASSIGN_CANCEL, self._watch(FreezeChanged))
        client.watch_data(paths.CANCEL_REASSIGNMENT, self._watch(CancelRequested))
        client.watch_data(paths.REASSIGN_QUEUE, self._watch(QueueChanged))
        for topic in sorted(ctx.topic_meta):
            self._watch_topic(topic)

    def _watch_topic(self, topic: str) -> None:
        if topic in self._watched_topics:
            return
        self._watched_topics.add(topic)
        generation = self._generation

        def callback(node: Node | None) -> Any:
            if generation != self._generation:
                return False
            if node is None:  # deleted: a recreated topic gets a new watch from the topic-change handler
                self._watched_topics.discard(topic)
                return False
            self.loop.put(PartitionModifications(topic))
            return None

        self.client.watch_data(paths.topic(topic), callback)

    # -- applying effects --------------------------------------------------------------------------------

    def _decide(self, decide: Callable[[ControllerContext], Effects]) -> dict[int, Future[Reply]]:
        """Decide against the context and apply; on a state-znode race re-read those partitions and retry."""
        for _attempt in range(MAX_CONFLICT_RETRIES):
            ctx = self.ctx
            if ctx is None:
                return {}
            effects = decide(ctx)
            try:
                return self._apply(ctx, effects)
            except StateConflict as conflict:
                if conflict.committed:
                    self._after_write(ctx, restrict(effects, conflict.committed))
                self._refresh_states(sorted(conflict.partitions - conflict.committed))
            except ControllerMoved as moved:
                self._resign(moved.what)
                return {}
        raise RuntimeError(f"gave up after {MAX_CONFLICT_RETRIES} rounds of state znode conflicts")

    def _apply(self, ctx: ControllerContext, effects: Effects) -> dict[int, Future[Reply]]:
        if effects.empty:
            self._log_state_changes(effects)
            return {}
        self.store.write(ctx, effects, self.epoch_version)
        return self._after_write(ctx, effects)

    @staticmethod
    def _log_state_changes(effects: Effects) -> None:
        for line in effects.log:
            state_change_log.info("%s", line)

    def _after_write(self, ctx: ControllerContext, effects: Effects) -> dict[int, Future[Reply]]:
        """Memory, the state-change log, then the brokers' requests queued (not waited for: a silent broker
        must not hold up the next decision), then finished reassignments removed from the znode."""
        apply_to_memory(ctx, effects)
        self._log_state_changes(effects)  # after ZooKeeper accepted them: the log says what happened
        started = time.perf_counter()
        replies = self.channel.send(self.broker_id, ctx.epoch, effects.requests, self._counts(ctx, effects)) \
            if effects.requests else {}
        sent = time.perf_counter()
        if effects.reassignments_done:
            self.store.remove_reassignments(effects.reassignments_done)
        log.debug("requests to %d brokers in %.3fs, bookkeeping %.3fs", len(effects.requests), sent - started,
                 time.perf_counter() - sent)
        return replies

    @staticmethod
    def _counts(ctx: ControllerContext, effects: Effects) -> dict[str, tuple[int, int]]:
        """KIP-253 counts of the topics this event's LeaderAndIsr entries name."""
        topics = {e.tp.topic for reqs in effects.requests.values() for e in reqs.leader_and_isr}
        out = {}
        for topic in topics:
            meta = ctx.topic_meta.get(topic)
            if meta is not None and meta.initial_partition_count is not None \
                    and meta.undeleted_partition_count is not None:
                out[topic] = (meta.initial_partition_count, meta.undeleted_partition_count)
        return out

    def _refresh_states(self, tps: list[TopicPartition]) -> None:
        if self.ctx is None or not tps:
            return
        for tp, state in self.store.read_states(tps).items():
            if state is not None:
                self.ctx.states[tp] = state

    # -- handlers ----------------------------------------------------------------------------------------

    def _broker_change(self) -> None:
        ctx = self.ctx
        assert ctx is not None
        registered = {b.id: b for b in self._read_brokers()}
        bounced = {b for b, br in registered.items() if b in ctx.live and ctx.live[b] != br.epoch}
        dead = (set(ctx.live) - set(registered)) | bounced
        new = (set(registered) - set(ctx.live)) | bounced
        self.channel.set_brokers({b: _address(br) for b, br in registered.items()})
        if dead:
            state_change_log.info("[controller %d epoch %d] brokers %s left", self.broker_id, ctx.epoch, sorted(dead))
            self._refresh_unclean({tp.topic for b in dead for tp in ctx.partitions_on(b)})
            self._decide(lambda c: decisions.on_broker_failure(c, dead))
            for b in dead:
                ctx.live.pop(b, None)
                ctx.shutting_down.discard(b)
        if new:
            self._refresh_unclean({tp.topic for b in new for tp in ctx.partitions_on(b)})
        for b in sorted(new):
            ctx.live[b] = registered[b].epoch or 0
            state_change_log.info("[controller %d epoch %d] broker %d joined", self.broker_id, ctx.epoch, b)
            self._decide(functools.partial(decisions.on_broker_startup, broker=b))
        if new:
            waiting = sorted(tp for tp, a in ctx.assignments.items() if a.reassigning)
            if waiting:
                self._decide(lambda c: decisions.maybe_complete_reassignments(c, waiting))
            if ctx.topics_to_delete:
                self._topic_deletion()

    def _read_brokers(self) -> list[Broker]:
        ids = sorted(int(i) for i in self.client.children(paths.BROKER_IDS) or [] if i.isdigit())
        out = []
        for broker_id, node in zip(ids, self.client.get_many([paths.broker(i) for i in ids])):
            if node is None:
                continue
            try:
                out.append(decode_broker(broker_id, node.data, paths.broker(broker_id), node.stat.czxid))
            except ZnodeFormatError as exc:
                log.warning("ignoring %s", exc.one_line())
        return out

    def _topic_change(self) -> None:
        ctx = self.ctx
        assert ctx is not None
        names = set(self.client.children(paths.BROKER_TOPICS) or [])
        for gone in sorted(set(ctx.topic_meta) - names):
            for tp in ctx.partitions_of(gone):  # removed behind our back: forget it
                ctx.assignments.pop(tp, None)
                ctx.states.pop(tp, None)
                ctx.marked.discard(tp)
            ctx.topic_meta.pop(gone, None)
        for topic in sorted(names - set(ctx.topic_meta)):
            self._partition_modifications(topic)
            self._watch_topic(topic)

    def _partition_modifications(self, topic: str) -> None:
        """The topic znode was created or changed: new partitions, KIP-253 counts (see `partition_counts`).

        The znode and the counts known before are read afresh on every attempt: after a partly committed write
        (a state-znode race) the retry must see the counts that write already put in the znode and in memory,
        or a finished expansion would read as a request to shrink."""

        def decide(ctx: ControllerContext) -> Effects:
            try:
                assignment = self.store.read_topic(topic)
            except ZnodeFormatError as exc:
                log.warning("ignoring %s", exc.one_line())
                return Effects()
            if assignment is None:
                return Effects()
            known = ctx.topic_meta.get(topic)
            ctx.topic_meta[topic] = assignment
            previous = None if known is None else (known.initial_partition_count, known.undeleted_partition_count)
            if known is None:  # a topic we have not seen: its states may exist already (written by someone else)
                new = sorted(TopicPartition(topic, p) for p in assignment.replicas
                             if TopicPartition(topic, p) not in ctx.assignments)
                for tp, state in self.store.read_states(new).items():
                    if state is not None:
                        ctx.states[tp] = state
                        ctx.assignments[tp] = decisions.Assignment(assignment.replicas[tp.partition])
                        if state.before_deletion:
                            ctx.marked.add(tp)
            return partition_counts.on_topic_znode(ctx, topic, assignment, previous)

        self._decide(decide)

    def _drain_check(self) -> None:
        """KIP-253: ask the leaders of marked partitions for their log offsets; delete those that drained."""
        ctx = self.ctx
        assert ctx is not None
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in sorted(ctx.marked):
            state = ctx.states.get(tp)
            if state is not None and state.leader in ctx.live_ids():
                by_leader.setdefault(state.leader, []).append(tp)
        drained: set[TopicPartition] = set()
        for leader, tps in sorted(by_leader.items()):
            reply = self.channel.call(leader, LOG_OFFSETS, {"partitions": [[tp.topic, tp.partition] for tp in tps]},
                                     timeout=5.0)
            for topic, p, start, end in (reply or {}).get("offsets", []):
                if int(start) == int(end):
                    drained.add(TopicPartition(str(topic), int(p)))
        if drained:
            self._decide(lambda c: partition_counts.delete_drained(c, drained))

    def _topic_deletion(self) -> None:
        ctx = self.ctx
        assert ctx is not None
        marked = set(self.client.children(paths.DELETE_TOPICS) or [])
        todo = marked - self._deletions_sent
        if not todo:
            return
        replies = self._decide(lambda c: decisions.on_topic_deletion(c, todo))
        for topic in sorted(todo):
            if topic not in ctx.topics_to_delete:  # no such topic: marker removed
                self.store.delete_quietly(paths.delete_topic(topic))
                continue
            replicas = {r for tp in ctx.partitions_of(topic) for r in ctx.assignments[tp].replicas}
            answered = {r: wait(replies[r], self.channel.timeout) for r in replicas if r in replies}
            if replicas and all(answered.get(r) is not None for r in replicas):
                self._deletions_sent.add(topic)
                self.loop.put(ReplicasDeleted(topic))

    def _reassignment(self) -> None:
        try:
            found = self.store.read_reassignment()
        except ZnodeFormatError as exc:
            log.warning("reassignment ignored, as Kafka would: %s", exc.one_line())
            return
        if found is None:
            self._reassign_czxid = None
            return
        targets, czxid = found
        if czxid == self._reassign_czxid:
            return  # our own rewrite of the znode (entries removed), not a new request
        self._reassign_czxid = czxid
        if self._frozen(paths.REASSIGN_PARTITIONS, len(targets)):
            return
        requested = self._valid_targets(targets)
        self._decide(lambda c: decisions.start_reassignment(c, requested))

    def _valid_targets(self, targets: list[Any]) -> dict[TopicPartition, tuple[int, ...]]:
        requested: dict[TopicPartition, tuple[int, ...]] = {}
        for t in targets:
            tp = TopicPartition(t.topic, t.partition)
            if not t.replicas or len(set(t.replicas)) != len(t.replicas):
                log.warning("%s: reassignment to %s dropped: empty or duplicate replicas", tp, list(t.replicas))
                self.store.remove_reassignments([tp])
                continue
            requested[tp] = t.replicas
        return requested

    def _frozen(self, path: str, entries: int) -> bool:
        """KIP-236 freeze: while /admin/reassign_cancel exists, requests are skipped and removed."""
        if self.client.exists(paths.REASSIGN_CANCEL) is None:
            return False
        state_change_log.warning("[controller %d epoch %d] %s: %d reassignments skipped and removed: "
                                 "reassignments are frozen while %s exists", self.broker_id,
                                 self.ctx.epoch if self.ctx else -1, path, entries, paths.REASSIGN_CANCEL)
        self.store.delete_quietly(path)
        return True

    def _cancel_pending(self) -> int:
        ctx = self.ctx
        assert ctx is not None
        pending = sorted(tp for tp, a in ctx.assignments.items() if a.reassigning)
        if pending:
            self._decide(lambda c: decisions.cancel_reassignments(c, pending))
        return len(pending)

    def _cancel(self) -> None:
        """KIP-236 cancel: roll back what is pending, then delete the reassignment and the cancel znodes."""
        if self.client.exists(paths.CANCEL_REASSIGNMENT) is None:
            return
        count = self._cancel_pending()
        self.store.delete_quietly(paths.REASSIGN_PARTITIONS)
        self._reassign_czxid = None
        self.store.delete_quietly(paths.CANCEL_REASSIGNMENT)
        state_change_log.info("[controller %d epoch %d] cancellation of %d pending reassignments done",
                              self.broker_id, self.ctx.epoch if self.ctx else -1, count)

    def _freeze(self) -> None:
        """KIP-236 freeze: creating /admin/reassign_cancel cancels what is pending; it stays until removed."""
        if self.client.exists(paths.REASSIGN_CANCEL) is None:
            return
        self._cancel_pending()
        self.store.delete_quietly(paths.REASSIGN_PARTITIONS)
        self._reassign_czxid = None

    def _queue(self) -> None:
        """KIP-236 queue: new moves start at once; a pending partition is rolled back, then re-targeted."""
        ctx = self.ctx
        assert ctx is not None
        try:
            targets = self.store.read_queue()
        except ZnodeFormatError as exc:
            log.warning("queued reassignments ignored: %s", exc.one_line())
            self.store.delete_quietly(paths.REASSIGN_QUEUE)
            return
        if targets is None or self._frozen(paths.REASSIGN_QUEUE, len(targets)):
            return
        requested = self._valid_targets(targets)
        pending = sorted(tp for tp in requested if tp in ctx.assignments and ctx.assignments[tp].reassigning
                         and ctx.assignments[tp].target_replicas != requested[tp])
        if pending:
            self._decide(lambda c: decisions.cancel_reassignments(c, pending))
        if requested:
            self._reassign_czxid = self.store.merge_reassignments(
                [t for t in targets if TopicPartition(t.topic, t.partition) in requested])
            self._decide(lambda c: decisions.start_reassignment(c, requested))
        self.store.delete_quietly(paths.REASSIGN_QUEUE)

    def _preferred_election(self) -> None:
        try:
            tps = self.store.read_preferred_election()
        except ZnodeFormatError as exc:
            log.warning("preferred election ignored: %s", exc.one_line())
            self.store.delete_quietly(paths.PREFERRED_REPLICA_ELECTION)
            return
        if tps is None:
            return
        # the partitions' leader and ISR read from their state znodes first, as Kafka's controller does before any
        # election (ZkPartitionStateMachine reads them in doElectLeaderForPartitions): a replica back in sync may
        # already be in the znode's ISR while its ISR-change notification is still on its way, and an election
        # judged on the cached ISR skipped it and dropped the request (CI's rerun at 03c342e)
        ctx = self.ctx
        assert ctx is not None
        self._refresh_states(sorted({tp for tp in tps if tp in ctx.assignments}))
        self._decide(lambda c: decisions.on_preferred_election(c, tps))
        self.store.delete_quietly(paths.PREFERRED_REPLICA_ELECTION)

    def _isr_changed(self) -> None:
        ctx = self.ctx
        assert ctx is not None
        names = self.client.children(paths.ISR_CHANGE_NOTIFICATION) or []
        if not names:
            return
        changed = sorted(tp for tp in self.store.take_isr_notifications(names) if tp in ctx.assignments)
        self._refresh_states(changed)
        reassigning = [tp for tp in changed if ctx.assignments[tp].reassigning]
        reorders = self._requested_reorders(set(changed) - set(reassigning))

        def decide(c: ControllerContext) -> Effects:
            effects = decisions.maybe_complete_reassignments(c, reassigning)
            effects.merge(decisions.complete_reorders(c, reorders))
            effects.metadata_to(c.live_ids())
            return effects

        self._decide(decide)

    def _refresh_unclean(self, topics: set[str]) -> None:
        """Read unclean.leader.election.enable as Kafka resolves it (the topic's override, else the cluster-wide
        default in /config/brokers/<default>, else false) for the topics an election may now touch."""
        ctx = self.ctx
        assert ctx is not None
        if not topics:
            return
        names = sorted(topics)
        nodes = self.client.get_many([paths.config("topics", t) for t in names]
                                     + [paths.config("brokers", "<default>")])
        configs = [_config_of(node) for node in nodes]
        default = configs[-1].get(UNCLEAN, "false").lower() == "true"
        for name, config in zip(names, configs[:-1]):
            if config.get(UNCLEAN, str(default)).lower() == "true":
                ctx.unclean_allowed.add(name)
            else:
                ctx.unclean_allowed.discard(name)

    def _requested_reorders(self, tps: set[TopicPartition]) -> dict[TopicPartition, tuple[int, ...]]:
        """Requested moves among `tps` that keep their replica set: they wait for the ISR, not for a copy."""
        ctx = self.ctx
        assert ctx is not None
        if not tps:
            return {}
        try:
            found = self.store.read_reassignment()
        except ZnodeFormatError:
            return {}
        targets = {} if found is None else {TopicPartition(t.topic, t.partition): tuple(t.replicas) for t in found[0]}
        return {tp: r for tp, r in targets.items()
                if tp in tps and tp in ctx.assignments and set(r) == set(ctx.assignments[tp].replicas)}

    def _controlled_shutdown(self, event: ControlledShutdown) -> None:
        ctx = self.ctx
        assert ctx is not None
        if event.broker not in ctx.live:
            event.reply.set_exception(RuntimeError(f"broker {event.broker} is not registered"))
            return
        ctx.shutting_down.add(event.broker)
        self._decide(lambda c: decisions.on_controlled_shutdown(c, event.broker))
        still_leading = sum(1 for tp, s in ctx.states.items()
                            if s.leader == event.broker and len(ctx.assignments[tp].replicas) > 1)
        event.reply.set_result(still_leading)

    def stats(self) -> dict[str, Any]:
        s = self.loop.stats
        return {"active": self.is_active, "controller_id": self.active_id,
                "epoch": self.ctx.epoch if self.ctx else None, "events_processed": s.processed,
                "events_failed": s.failed, "busy_seconds": round(s.busy_seconds, 6), "max_queue": s.max_queue}
