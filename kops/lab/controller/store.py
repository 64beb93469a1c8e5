"""The controller's view of ZooKeeper: load the context at failover, write effects fenced by the epoch.

Every multi-op the active controller sends starts with `check(/controller_epoch, version)`: a controller that
was replaced (its epoch znode moved on) fails that check and resigns instead of overwriting its successor
(Kafka's `expectedControllerEpochZkVersion`). Effects are written in multi-ops of at most `batch_ops`
operations, so 10,000 leader changes take a handful of round trips instead of 10,000.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from kops.errors import KopsError, ZnodeFormatError
from kops.lab.controller.context import Assignment, ControllerContext, LeaderState
from kops.lab.controller.effects import Effects
from kops.model.brokers import Broker
from kops.model.partitions import PartitionState, TopicPartition
from kops.model.topics import TopicAssignment
from kops.zk_layout import paths
from kops.zk_layout.client import NodeExists, NodeMissing, PendingTxn, TransactionFailed, VersionConflict, ZkClient
from kops.zk_layout.codecs.admin_requests import (
    ReassignmentTarget,
    decode_partition_list,
    decode_reassignment,
    encode_reassignment,
)
from kops.zk_layout.codecs.brokers import decode_broker
from kops.zk_layout.codecs.controller import (
    ControllerRegistration,
    decode_controller,
    decode_controller_epoch,
    encode_controller,
    encode_controller_epoch,
)
from kops.zk_layout.codecs.notifications import decode_isr_change
from kops.zk_layout.codecs.partition_state import decode_partition_state, encode_partition_state
from kops.zk_layout.codecs.topics import decode_topic, encode_topic

log = logging.getLogger(__name__)

INITIAL_CONTROLLER_EPOCH = 0


class ControllerMoved(KopsError):
    """Another broker became controller: this one's epoch is stale and its writes were refused."""


class StateConflict(KopsError):
    """A partition state znode changed under the controller (a leader's ISR update raced with it)."""

    def __init__(self, partitions: set[TopicPartition], committed: set[TopicPartition]) -> None:
        super().__init__(f"{len(partitions)} partition states changed concurrently")
        self.partitions = partitions
        self.committed = committed


@dataclass
class ClusterView:
    """What failover reads besides the context: broker registrations and pending admin requests."""

    brokers: dict[int, Broker] = field(default_factory=dict)
    bad_znodes: list[str] = field(default_factory=list)


Op = tuple[str, str, "bytes | None", int, "TopicPartition | None"]  # kind, path, data, expected version, partition


class ControllerStore:
    def __init__(self, client: ZkClient, batch_ops: int = 1500) -> None:
        self.client = client
        self.batch_ops = batch_ops

    # -- election ----------------------------------------------------------------------------------------

    def active_controller(self) -> int | None:
        node = self.client.get(paths.CONTROLLER)
        if node is None:
            return None
        try:
            return decode_controller(node.data, paths.CONTROLLER).broker_id
        except ZnodeFormatError:
            return None

    def register_controller(self, broker_id: int) -> tuple[int, int] | None:
        """Create ephemeral /controller and bump /controller_epoch in one multi-op; None if someone else won."""
        node = self.client.get(paths.CONTROLLER_EPOCH)
        if node is None:
            with contextlib.suppress(NodeExists):
                self.client.create(paths.CONTROLLER_EPOCH, encode_controller_epoch(INITIAL_CONTROLLER_EPOCH))
            node = self.client.get(paths.CONTROLLER_EPOCH)
            assert node is not None
        epoch = decode_controller_epoch(node.data, paths.CONTROLLER_EPOCH) + 1
        registration = ControllerRegistration(broker_id, str(int(time.time() * 1000)))
        txn = self.client.transaction()
        txn.create(paths.CONTROLLER, encode_controller(registration), ephemeral=True)
        txn.set(paths.CONTROLLER_EPOCH, encode_controller_epoch(epoch), version=node.stat.version)
        try:
            txn.commit()
        except TransactionFailed as exc:
            if isinstance(exc.cause, (NodeExists, VersionConflict)):
                return None
            raise
        return epoch, node.stat.version + 1

    # -- failover ----------------------------------------------------------------------------------------

    def load(self, controller_id: int, epoch: int) -> tuple[ControllerContext, ClusterView]:
        """Everything the controller keeps in memory, with the state znodes' versions for compare-and-set."""
        client = self.client
        view = ClusterView()
        ctx = ControllerContext(controller_id, epoch)
        ids_raw, names, deletions = client.children_many([paths.BROKER_IDS, paths.BROKER_TOPICS, paths.DELETE_TOPICS])
        ids = sorted(int(i) for i in ids_raw or [] if i.isdigit())
        names = sorted(names or [])
        nodes = client.get_many([paths.broker(i) for i in ids] + [paths.topic(t) for t in names])
        for broker_id, node in zip(ids, nodes[: len(ids)]):
            if node is None:
                continue
            try:
                view.brokers[broker_id] = decode_broker(broker_id, node.data, paths.broker(broker_id), node.stat.czxid)
                ctx.live[broker_id] = node.stat.czxid
            except ZnodeFormatError as exc:
                view.bad_znodes.append(exc.one_line())
        for name, node in zip(names, nodes[len(ids):]):
            if node is None:
                continue
            try:
                self._remember_topic(ctx, name, decode_topic(node.data, paths.topic(name)))
            except ZnodeFormatError as exc:
                view.bad_znodes.append(exc.one_line())
        ctx.states.update({tp: s for tp, s in self.read_states(sorted(ctx.assignments)).items() if s is not None})
        ctx.marked = {tp for tp, s in ctx.states.items() if s.before_deletion}
        ctx.topics_to_delete = set(deletions or [])
        return ctx, view

    @staticmethod
    def _remember_topic(ctx: ControllerContext, name: str, topic: TopicAssignment) -> None:
        ctx.topic_meta[name] = topic
        for p, replicas in topic.replicas.items():
            ctx.assignments[TopicPartition(name, p)] = Assignment(
                replicas, topic.adding.get(p, ()), topic.removing.get(p, ()))

    def read_topic(self, name: str) -> TopicAssignment | None:
        node = self.client.get(paths.topic(name))
        return None if node is None else decode_topic(node.data, paths.topic(name))

    def read_states(self, tps: list[TopicPartition]) -> dict[TopicPartition, LeaderState | None]:
        nodes = self.client.get_many([paths.partition_state(tp.topic, tp.partition) for tp in tps])
        out: dict[TopicPartition, LeaderState | None] = {}
        for tp, node in zip(tps, nodes):
            if node is None:
                out[tp] = None
                continue
            try:
                s = decode_partition_state(node.data, paths.partition_state(tp.topic, tp.partition))
            except ZnodeFormatError as exc:
                log.warning("%s", exc.one_line())
                out[tp] = None
                continue
            out[tp] = LeaderState(s.leader, s.leader_epoch, s.isr, node.stat.version,
                                  s.leader_epoch_after_creation, s.leader_epoch_before_deletion)
        return out

    # -- admin requests ----------------------------------------------------------------------------------

    def read_reassignment(self) -> tuple[list[ReassignmentTarget], int] | None:
        """The requested targets and the znode's czxid (to process each creation once); None if absent."""
        node = self.client.get(paths.REASSIGN_PARTITIONS)
        if node is None:
            return None
        return decode_reassignment(node.data, paths.REASSIGN_PARTITIONS), node.stat.czxid

    def read_queue(self) -> list[ReassignmentTarget] | None:
        node = self.client.get(paths.REASSIGN_QUEUE)
        return None if node is None else decode_reassignment(node.data, paths.REASSIGN_QUEUE)

    def merge_reassignments(self, targets: list[ReassignmentTarget]) -> int:
        """Add (or replace) entries of /admin/reassign_partitions, creating it if absent; its czxid."""
        while True:
            node = self.client.get(paths.REASSIGN_PARTITIONS)
            if node is None:
                try:
                    self.client.create(paths.REASSIGN_PARTITIONS, encode_reassignment(sorted(targets)))
                except NodeExists:
                    continue
                stat = self.client.exists(paths.REASSIGN_PARTITIONS)
                return stat.czxid if stat else 0
            merged = {(t.topic, t.partition): t for t in decode_reassignment(node.data, paths.REASSIGN_PARTITIONS)}
            merged.update({(t.topic, t.partition): t for t in targets})
            try:
                self.client.set(paths.REASSIGN_PARTITIONS, encode_reassignment(sorted(merged.values())),
                                node.stat.version)
                return node.stat.czxid
            except (VersionConflict, NodeMissing):
                continue

    def remove_reassignments(self, done: Iterable[TopicPartition]) -> None:
        """Drop completed entries from the reassignment znode (delete it when empty), as Kafka 2.4+ does."""
        done_set = set(done)
        while done_set:
            node = self.client.get(paths.REASSIGN_PARTITIONS)
            if node is None:
                return
            try:
                targets = decode_reassignment(node.data, paths.REASSIGN_PARTITIONS)
            except ZnodeFormatError:
                return
            remaining = [t for t in targets if TopicPartition(t.topic, t.partition) not in done_set]
            if len(remaining) == len(targets):
                return
            try:
                if remaining:
                    self.client.set(paths.REASSIGN_PARTITIONS, encode_reassignment(remaining), node.stat.version)
                else:
                    self.client.delete(paths.REASSIGN_PARTITIONS, node.stat.version)
                return
            except (VersionConflict, NodeMissing):
                continue

    def read_preferred_election(self) -> list[TopicPartition] | None:
        node = self.client.get(paths.PREFERRED_REPLICA_ELECTION)
        if node is None:
            return None
        return [TopicPartition(tp.topic, tp.partition)
                for tp in decode_partition_list(node.data, paths.PREFERRED_REPLICA_ELECTION)]

    def delete_quietly(self, path: str) -> None:
        with contextlib.suppress(NodeMissing):
            self.client.delete(path)

    def take_isr_notifications(self, names: list[str]) -> set[TopicPartition]:
        """Read then delete the named notifications; the partitions whose ISR changed."""
        names = [n for n in names if n.startswith(paths.ISR_CHANGE_PREFIX)]
        full = [f"{paths.ISR_CHANGE_NOTIFICATION}/{n}" for n in names]
        changed: set[TopicPartition] = set()
        for path, node in zip(full, self.client.get_many(full)):
            if node is None:
                continue
            try:
                changed.update(TopicPartition(tp.topic, tp.partition) for tp in decode_isr_change(node.data, path))
            except ZnodeFormatError as exc:
                log.warning("ignoring %s", exc.one_line())
        for start in range(0, len(full), self.batch_ops):
            txn = self.client.transaction()
            for path in full[start:start + self.batch_ops]:
                txn.delete(path)
            try:
                txn.commit()
            except TransactionFailed:
                for path in full[start:start + self.batch_ops]:
                    self.delete_quietly(path)
        return changed

    # -- writes ------------------------------------------------------------------------------------------

    def write(self, ctx: ControllerContext, effects: Effects, epoch_version: int) -> None:
        """Write the effects' znodes in fenced multi-ops. Raises ControllerMoved or StateConflict.

        On StateConflict only the raced partitions (`partitions`) were not written; `committed` were.
        """
        ops = self._ops(ctx, effects)
        pending = [(chunk, self._send(chunk, epoch_version))
                   for chunk in (ops[i:i + self.batch_ops] for i in range(0, len(ops), self.batch_ops))]
        committed: set[TopicPartition] = set()
        conflicted: list[Op] = []
        for chunk, sent in pending:  # every batch in flight at once, answered in order
            try:
                sent.result()
                committed.update(op[4] for op in chunk if op[4] is not None)
            except TransactionFailed as exc:
                self._raise_unless_conflict(exc, chunk)
                conflicted.extend(chunk)
        if not conflicted:
            return
        # One raced state znode rolled its whole batch back. Resend that batch one partition per multi-op (all
        # in flight at once), so only the partitions that really changed under us are left to decide again.
        groups: dict[object, list[Op]] = {}
        for op in conflicted:
            groups.setdefault(op[4] if op[4] is not None else op[1], []).append(op)
        resent = [(group, self._send(group, epoch_version)) for group in groups.values()]
        raced: set[TopicPartition] = set()
        for group, sent in resent:
            try:
                sent.result()
                committed.update(op[4] for op in group if op[4] is not None)
            except TransactionFailed as exc:
                self._raise_unless_conflict(exc, group)
                raced.update(op[4] for op in group if op[4] is not None)
        if raced:
            raise StateConflict(raced, committed)

    def _ops(self, ctx: ControllerContext, effects: Effects) -> list[Op]:
        """The effects as znode operations: topic znodes, partition states (created or conditionally set),
        KIP-253 partition deletions, whole topic trees deleted."""
        ops: list[Op] = []
        rewritten = ({tp.topic for tp in effects.assignments} | set(effects.topic_counts)
                     | {tp.topic for tp in effects.deleted_partitions})
        for name in sorted(rewritten - effects.deleted_topics):
            ops.append(("set", paths.topic(name), self._encode_topic(ctx, effects, name), -1, None))
        missing_parents = self._missing_partition_parents(effects)
        for tp, state in sorted(effects.states.items()):
            data = encode_partition_state(PartitionState(
                state.leader, state.leader_epoch, state.isr, ctx.epoch,
                leader_epoch_after_creation=state.after_creation, leader_epoch_before_deletion=state.before_deletion))
            path = paths.partition_state(tp.topic, tp.partition)
            if tp not in effects.created_states:
                ops.append(("set", path, data, state.zk_version, tp))
                continue
            if tp.topic in missing_parents:
                ops.append(("create", paths.partitions(tp.topic), None, -1, tp))
                missing_parents.discard(tp.topic)
            ops.append(("create", paths.partition(tp.topic, tp.partition), None, -1, tp))
            ops.append(("create", path, data, -1, tp))
        for tp in sorted(effects.deleted_partitions):  # KIP-253: after the topic znode stopped naming them
            ops.append(("delete", paths.partition_state(tp.topic, tp.partition), None, -1, tp))
            ops.append(("delete", paths.partition(tp.topic, tp.partition), None, -1, tp))
        for name in sorted(effects.deleted_topics):
            ops.extend(("delete", p, None, -1, None) for p in self._topic_tree(name))
        return ops

    def _send(self, ops: list[Op], epoch_version: int) -> PendingTxn:
        txn = self.client.transaction().check(paths.CONTROLLER_EPOCH, epoch_version)
        for kind, path, data, version, _tp in ops:
            if kind == "create":
                txn.create(path, data)
            elif kind == "set":
                txn.set(path, data or b"", version)
            else:
                txn.delete(path)
        return txn.commit_async()

    @staticmethod
    def _raise_unless_conflict(exc: TransactionFailed, ops: list[Op]) -> None:
        if exc.index == 0:
            raise ControllerMoved("controller epoch moved on; another broker is controller") from exc
        failed = ops[exc.index - 1]
        if not (isinstance(exc.cause, VersionConflict) and failed[4] is not None):
            raise exc

    def _encode_topic(self, ctx: ControllerContext, effects: Effects, name: str) -> bytes:
        meta = ctx.topic_meta.get(name) or TopicAssignment({})
        replicas, adding, removing = {}, {}, {}
        merged = {tp: a for tp, a in ctx.assignments.items() if tp.topic == name}
        merged.update({tp: a for tp, a in effects.assignments.items() if tp.topic == name})
        for tp in effects.deleted_partitions:
            merged.pop(tp, None)
        initial, undeleted = effects.topic_counts.get(
            name, (meta.initial_partition_count, meta.undeleted_partition_count))
        for tp, a in merged.items():
            replicas[tp.partition] = a.replicas
            if a.adding:
                adding[tp.partition] = a.adding
            if a.removing:
                removing[tp.partition] = a.removing
        version = max(meta.version, 2)
        return encode_topic(TopicAssignment(replicas, adding, removing, meta.topic_id, version, initial, undeleted))

    def _missing_partition_parents(self, effects: Effects) -> set[str]:
        topics = sorted({tp.topic for tp in effects.created_states})
        if not topics:
            return set()
        found = self.client.children_many([paths.partitions(t) for t in topics])
        return {t for t, children in zip(topics, found) if children is None}

    def _topic_tree(self, name: str) -> list[str]:
        """Znodes of a topic, children first, then its config and deletion marker."""
        out: list[str] = []
        partitions = self.client.children(paths.partitions(name))
        if partitions is not None:
            numbers = sorted(partitions, key=lambda p: (len(p), p))
            states = self.client.children_many([paths.partition(name, int(p)) for p in numbers if p.isdigit()])
            for p, children in zip([p for p in numbers if p.isdigit()], states):
                if children and "state" in children:
                    out.append(paths.partition_state(name, int(p)))
                out.append(paths.partition(name, int(p)))
            out.append(paths.partitions(name))
        if self.client.exists(paths.topic(name)):
            out.append(paths.topic(name))
        if self.client.exists(paths.config("topics", name)):
            out.append(paths.config("topics", name))
        if self.client.exists(paths.delete_topic(name)):
            out.append(paths.delete_topic(name))
        return out
