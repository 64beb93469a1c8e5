"""One lab broker process: registration, RPC, replica manager, fetchers, config follower, and a controller.

Startup (as KafkaServer): connect to ZooKeeper, create the persistent paths and the cluster id if missing,
serve the RPC, register `/brokers/ids/<id>` (ephemeral, v5), start the controller (which joins the
election). Shutdown on SIGTERM is controlled: ask the controller to move leadership away (retried), then
close the session so the registration vanishes at once. SIGKILL is a crash: the registration vanishes when
the session expires. So does a full disk (KIP-112, `disk`): the dir goes offline and, being the broker's only
one, the process halts as Kafka's does, without a controlled shutdown.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import logging
import os
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kops.kip179.protocol import ALTER_TOPICS, DESCRIBE_LOG_DIRS, REPLICA_STATUS
from kops.lab.broker.clock import SimClock
from kops.lab.broker.configs import ConfigFollower
from kops.lab.broker.disk import LogDirDisk
from kops.lab.broker.kip179_endpoint import Kip179Endpoint
from kops.lab.broker.replicas import FIRST_FETCH_BYTES, IsrUpdate, ReplicaManager
from kops.lab.broker.throttles import FOLLOWER_RATE, LEADER_RATE, parse_rate
from kops.lab.controller.channel import call_registered_broker
from kops.lab.controller.controller import LOG_OFFSETS, Controller
from kops.lab.controller.events import ControlledShutdown
from kops.lab.controller.wire import ControllerBatch, decode_batch
from kops.model.brokers import Broker, FeatureRange
from kops.model.features import KIP179_ADMIN, KIP236_CANCEL, KIP236_FREEZE, KIP236_QUEUE, KIP253_PARTITION_DELETION
from kops.model.partitions import PartitionState, TopicPartition
from kops.rpc import RpcClient, RpcError, RpcServer, RpcUnavailable
from kops.zk_layout import paths
from kops.zk_layout.client import Node, NodeExists, TransactionFailed, VersionConflict, ZkClient, ZkSettings
from kops.zk_layout.codecs.brokers import encode_broker
from kops.zk_layout.codecs.cluster import encode_cluster_id
from kops.zk_layout.codecs.log_dirs import BrokerLogDirs, LogDir, LogDirsReport, ReplicaSize, encode_log_dirs
from kops.zk_layout.codecs.notifications import encode_isr_change
from kops.zk_layout.codecs.partition_state import decode_partition_state, encode_partition_state

log = logging.getLogger(__name__)

# What the lab advertises in its registration (docs/design/architecture.md §2): a real Kafka advertises none of these.
LAB_FEATURES = {name: FeatureRange(1, 1) for name in (
    "kops.lab", KIP236_CANCEL, KIP236_FREEZE, KIP236_QUEUE, KIP253_PARTITION_DELETION, KIP179_ADMIN)}
SHUTDOWN_ATTEMPTS = 3
LOG_DIR_FILES_KEPT = 500
# beside DIR/logdirs, not in it: the sizes job reads every JSON file under the folder it is given
CAPACITY_FOLDER = "logdir-capacity"


@dataclass(frozen=True)
class BrokerSettings:
    broker_id: int
    connect: str
    lab_dir: Path
    rack: str | None = None
    clock: SimClock = SimClock()
    wall_origin_ms: int = 0  # wall-clock ms at simulated time zero: timestamps of log-dir snapshots
    session_timeout: float = 6.0
    bandwidth: float | None = 100 * 1024 * 1024  # bytes per simulated second, each direction
    lag_max: float = 30.0  # replica.lag.time.max.ms, in simulated seconds
    logdirs_every: float = 300.0  # simulated seconds between log-dir snapshots
    tick: float = 0.05  # real seconds between ticks
    disk_capacity: int | None = None  # bytes (simulated) of the broker's one log dir; None: unlimited

    @property
    def log_dir(self) -> str:
        return f"/kops-lab/broker-{self.broker_id}/data"


def new_cluster_id() -> str:
    """Kafka's format: a random UUID, base64url without padding (22 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


class BrokerServer:
    def __init__(self, settings: BrokerSettings) -> None:
        self.settings = settings
        self.id = settings.broker_id
        self.clock = settings.clock
        burst = max(1.0, 10 * settings.tick * settings.clock.scale)  # catch up after a stalled fetch round
        self.replicas = ReplicaManager(self.id, self.clock, settings.bandwidth, settings.lag_max, burst,
                                       LogDirDisk(settings.log_dir, settings.disk_capacity))
        self.replicas.on_dir_failure = self._dir_failed
        self.client = ZkClient(ZkSettings(settings.connect, session_timeout=settings.session_timeout))
        self.kip179 = Kip179Endpoint(self.client, self.replicas, self.wall_ms)
        self.rpc = RpcServer({
            "controller_batch": self._controller_batch,
            "fetch": self.replicas.handle_fetch,
            "wake_fetch": self.replicas.wake_fetch,
            "produce": self._produce,
            "seed_followers": lambda body: {"missing": self.replicas.seed_followers(body["partitions"])},
            "status": self._status,
            LOG_OFFSETS: self.replicas.log_offsets,
            ALTER_TOPICS: self.kip179.alter_topics,
            REPLICA_STATUS: self.kip179.replica_status,
            DESCRIBE_LOG_DIRS: self.kip179.describe_log_dirs,
            "controlled_shutdown": self._controlled_shutdown_request,
        })
        self.controller = Controller(self.id, self.client, on_session_lost=self._register)
        self.configs = ConfigFollower(self.client, self.id, self._topic_config, self._broker_config)
        self.stopping = threading.Event()
        self._work: queue.Queue[Callable[[], None]] = queue.Queue()
        self._fetchers: dict[int, threading.Thread] = {}
        # controller requests and the tick loop both start fetchers: unguarded, they started two for one leader
        # (seen on a 50-broker clone: a fifth of its fetchers twice, each copying and truncating the other's bytes)
        self._fetchers_lock = threading.Lock()
        self._next_logdirs = 0.0
        self.broker_epoch: int | None = None

    # -- lifecycle ---------------------------------------------------------------------------------------

    def start(self) -> BrokerServer:
        self.client.start()
        for path in paths.PERSISTENT_PATHS:
            self.client.ensure_path(path)
        if self.client.get(paths.CLUSTER_ID) is None:
            with contextlib.suppress(NodeExists):
                self.client.create(paths.CLUSTER_ID, encode_cluster_id(new_cluster_id()), makepath=True)
        self.rpc.start()
        self._start_thread(self._work_loop, "zk-worker")
        configs = self.configs
        configs.load_all()
        self.client.ensure_path(paths.CONFIG_CHANGES)  # as Kafka's notification listener: a watch on a missing
        self.client.watch_children(paths.CONFIG_CHANGES,  # path would never fire (kazoo stops it)
                                   lambda names: self._work.put(lambda: configs.process(names)))
        self.client.watch_data(paths.LAB_INGEST, lambda node: self._work.put(lambda: self._ingest(node)))
        self._register()
        self.controller.start()
        self._next_logdirs = self.clock.now() + self.settings.logdirs_every
        self._start_thread(self._tick_loop, "tick")
        log.info("broker %d started on 127.0.0.1:%d (rack %s)", self.id, self.rpc.port, self.settings.rack)
        return self

    def _start_thread(self, target: Callable[..., None], name: str, *args: Any) -> threading.Thread:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        return thread

    def _register(self) -> None:
        """Create the ephemeral registration as Kafka does: create empty, then set (so its version is 1)."""
        path = paths.broker(self.id)
        broker = Broker(self.id, "127.0.0.1", self.rpc.port, (f"PLAINTEXT://127.0.0.1:{self.rpc.port}",),
                        self.settings.rack, dict(LAB_FEATURES), {"PLAINTEXT": "PLAINTEXT"}, -1,
                        str(int(time.time() * 1000)), 5)
        deadline = time.monotonic() + 3 * self.settings.session_timeout
        while True:
            try:
                self.client.transaction().create(path, b"", ephemeral=True).set(path, encode_broker(broker), 0).commit()
                break
            except TransactionFailed as exc:
                # the previous process's registration lives until its session expires
                if not isinstance(exc.cause, NodeExists) or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        stat = self.client.exists(path)
        self.broker_epoch = stat.czxid if stat else None

    def run_until_stopped(self) -> None:
        while not self.stopping.wait(0.5):
            pass
        self.shutdown()

    def shutdown(self) -> None:
        """Controlled shutdown: leadership moves away first, then the session closes."""
        for attempt in range(1, SHUTDOWN_ATTEMPTS + 1):
            try:
                remaining = self._ask_controller_to_shut_down()
            except (RpcError, RpcUnavailable, RuntimeError) as exc:
                log.warning("controlled shutdown attempt %d: %s", attempt, exc)
                remaining = -1
            if remaining == 0:
                break
            time.sleep(0.5)
        self.stopping.set()
        self.controller.stop()
        self.client.stop()
        self.rpc.stop()
        log.info("broker %d stopped", self.id)

    def _dir_failed(self, why: str) -> None:
        """The log dir failed (called under the replica lock): handled on a thread of its own, as Kafka's
        LogDirFailureHandler does, so the request that hit the full disk is answered meanwhile."""
        self._start_thread(self._halt_for_dir, "log-dir-failure-handler", why)

    def _halt_for_dir(self, why: str) -> None:
        """Kafka's order (ReplicaManager, then LogManager.handleLogDirFailure): stop serving the dir's replicas,
        then, no live dir being left, halt: no controlled shutdown, no session close, no notification."""
        dir_ = self.settings.log_dir
        log.error("Error while writing to the log dir %s: %s", dir_, why)
        log.warning("Stopping serving replicas in dir %s because the log directory has failed.", dir_)
        offline = ",".join(f"{tp.topic}-{tp.partition}" for tp, _size, _lag in self.replicas.sizes())
        log.warning("Broker %d stopped fetcher for partitions %s because they are in the failed log directory %s.",
                    self.id, offline, dir_)
        log.critical("Shutdown broker because all log dirs in %s have failed", dir_)
        logging.shutdown()
        os._exit(1)  # Exit.halt(1)

    def _ask_controller_to_shut_down(self) -> int:
        controller_id = self.controller.store.active_controller()
        if controller_id is None:
            raise RuntimeError("no controller")
        reply = call_registered_broker(self.client, controller_id, "controlled_shutdown",
                                       {"broker_id": self.id, "broker_epoch": self.broker_epoch or 0})
        return int(reply.get("remaining", -1))

    # -- RPC handlers ------------------------------------------------------------------------------------

    def _controller_batch(self, body: dict[str, Any]) -> dict[str, Any]:
        batch = decode_batch(body)
        self._refresh_moving_topics(batch)
        reply = self.replicas.handle_controller_batch(batch)
        # A topic created after startup sent no config notification (Kafka's topic creation does not):
        # read its config when its first replica arrives, as a Kafka broker does when it creates the log.
        for topic in sorted({e.tp.topic for e in batch.leader_and_isr} - set(self.replicas.topic_configs)):
            self.replicas.topic_configs.setdefault(topic, {})
            self._work.put(functools.partial(self._refresh_topic_config, topic))
        self._ensure_fetchers()
        self._wake_parked_fetches()
        return reply

    def _wake_parked_fetches(self) -> None:
        """Tell each leader this broker now follows more partitions of that its parked fetch may not name them,
        from a thread of its own: a leader that does not answer must not hold up the controller's request."""
        gained = self.replicas.take_gained()
        if gained:
            self._start_thread(self._send_wakes, "wake-fetches", gained)

    def _send_wakes(self, gained: dict[int, int]) -> None:
        for leader, generation in sorted(gained.items()):
            known = self.replicas.brokers.get(leader)
            if known is None or self.stopping.is_set():
                continue
            client = RpcClient(known.host, known.port, timeout=2.0)
            try:
                client.call("wake_fetch", {"replica_id": self.id, "generation": generation})
            except (RpcUnavailable, RpcError):
                pass  # the parked fetch answers by itself within its wait (fetch_wait)
            finally:
                client.close()

    def _refresh_moving_topics(self, batch: ControllerBatch) -> None:
        """A partition whose replica set changes here, or that is new here, follows its topic's throttle lists
        as written before the reassignment: its config is read now, before the first fetch. A Kafka broker
        processes every topic's config notifications, hosted or not, and gets the one written first before the
        controller's request in practice; this broker queues notifications behind other ZooKeeper work, so it
        reads the znode itself rather than copy unthrottled. (A topic new to this broker counts too: the
        destination of a move has usually never hosted the topic, and reading it later let bench/rolling.py's
        new replicas copy unthrottled until the read landed.)"""
        with self.replicas.lock:
            hosted = self.replicas.replicas
            changed = {e.tp.topic for e in batch.leader_and_isr
                       if self.id in e.replicas and (e.tp not in hosted or hosted[e.tp].state.replicas != e.replicas)}
        for topic in sorted(changed):
            self._refresh_topic_config(topic)
        if changed:  # and this broker's rates, written before the lists, for the same reason
            self._broker_config(self.configs.read_entity("brokers", str(self.id)))

    def _produce(self, body: dict[str, Any]) -> dict[str, Any]:
        end = self.replicas.append(TopicPartition(str(body["topic"]), int(body["partition"])), int(body["bytes"]))
        return {"end": end}

    def _status(self, _body: dict[str, Any]) -> dict[str, Any]:
        disk, held, _sizes = self.replicas.log_dir()
        return {"broker": self.id, "sim_time": self.clock.now(), "controller": self.controller.stats(),
                "log_dir": {"path": disk.path, "error": disk.failure, "total_bytes": disk.total_bytes(),
                            "usable_bytes": disk.usable_bytes(held)},
                "replicas": self.replicas.status(), "config_sequence": self.configs.last_sequence,
                "topic_counts": {t: list(c) for t, c in sorted(self.replicas.topic_counts.items())}}

    def _controlled_shutdown_request(self, body: dict[str, Any]) -> dict[str, Any]:
        if not self.controller.is_active:
            raise RpcError(f"broker {self.id} is not the controller")
        event = ControlledShutdown(int(body["broker_id"]), int(body.get("broker_epoch", 0)))
        self.controller.loop.put(event)
        return {"remaining": event.reply.result(timeout=60)}

    # -- configs and ingest (applied on the zk-worker thread) --------------------------------------------

    def _work_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                job = self._work.get(timeout=0.5)
            except queue.Empty:
                continue
            try:
                job()
            except Exception:  # noqa: BLE001 - a bad znode must not stop config processing
                log.exception("config/ingest update failed")

    def _refresh_topic_config(self, topic: str) -> None:
        self._topic_config(topic, self.configs.read_entity("topics", topic))

    def _topic_config(self, topic: str, config: dict[str, str]) -> None:
        with self.replicas.lock:
            self.replicas.topic_configs[topic] = config
            self.replicas.throttles.update_topic(topic, config)

    def _broker_config(self, config: dict[str, str]) -> None:
        quotas = (self.replicas.leader_quota, self.replicas.follower_quota)
        before = [q.rate for q in quotas]
        self.replicas.leader_quota.set_rate(parse_rate(config.get(LEADER_RATE)))
        self.replicas.follower_quota.set_rate(parse_rate(config.get(FOLLOWER_RATE)))
        if [q.rate for q in quotas] != before:
            log.info("broker config applied: leader rate %s, follower rate %s",
                     config.get(LEADER_RATE), config.get(FOLLOWER_RATE))

    def _ingest(self, node: Node | None) -> None:
        rates: dict[str, float] = {}
        if node is not None and node.data:
            try:
                doc = json.loads(node.data)
                rates = {str(t): float(r) for t, r in doc.get("rates", {}).items()}
            except (ValueError, AttributeError):
                log.warning("ignoring malformed %s", paths.LAB_INGEST)
        with self.replicas.lock:
            self.replicas.ingest = rates

    # -- periodic work -----------------------------------------------------------------------------------

    def _tick_loop(self) -> None:
        last_retention = last_isr = 0.0
        # ISR expiry: at most every half second, and twice within the lag window at any clock speed
        stretch = self.clock.stretch
        isr_every = min(0.5 * stretch, self.settings.lag_max / self.clock.scale / 2)
        while not self.stopping.wait(self.settings.tick * stretch):
            try:
                now = time.monotonic()
                retention, isr = now - last_retention >= stretch, now - last_isr >= isr_every
                last_retention = now if retention else last_retention
                last_isr = now if isr else last_isr
                self.replicas.tick(retention, isr)
                self._write_isr_updates(self.replicas.take_isr_updates())
                self._ensure_fetchers()
                if self.clock.now() >= self._next_logdirs:
                    self._next_logdirs = self.clock.now() + self.settings.logdirs_every
                    self.write_log_dirs()
            except Exception:  # noqa: BLE001 - keep ticking; the next tick retries
                log.exception("tick failed")

    def _write_isr_updates(self, updates: list[IsrUpdate]) -> None:
        """Each changed state with a version check, then one `isr_change_` notification (seed 004 §G)."""
        written: list[TopicPartition] = []
        for u in updates:
            path = paths.partition_state(u.tp.topic, u.tp.partition)
            try:
                stat = self.client.set(path, encode_partition_state(self._isr_state(path, u)), u.zk_version)
            except VersionConflict:
                log.info("%s: state znode changed since version %d, ISR update %s skipped (waiting for the "
                         "controller)", u.tp, u.zk_version, list(u.isr))
                continue
            self.replicas.isr_written(u, stat.version)
            written.append(u.tp)
            log.info("%s: ISR -> %s (leader epoch %d)", u.tp, list(u.isr), u.leader_epoch)
        if written:
            self.client.create(f"{paths.ISR_CHANGE_NOTIFICATION}/{paths.ISR_CHANGE_PREFIX}",
                               encode_isr_change(written), sequence=True)

    def _isr_state(self, path: str, u: IsrUpdate) -> PartitionState:
        """The new state; fields the broker does not own (KIP-253 epoch maps) kept from the znode, which the
        version check guarantees is the one this broker last knew."""
        node = self.client.get(path)
        if node is None or node.stat.version != u.zk_version:
            raise VersionConflict(f"{path} changed since version {u.zk_version}")
        current = decode_partition_state(node.data, path)
        return replace(current, leader=u.leader, leader_epoch=u.leader_epoch, isr=u.isr,
                       controller_epoch=u.controller_epoch)

    def wall_ms(self) -> int:
        """Simulated time as wall-clock milliseconds (log-dir snapshots, ReplicaStatus status times)."""
        return self.settings.wall_origin_ms + int(self.clock.now() * 1000)

    def write_log_dirs(self) -> Path | None:
        """A kafka-log-dirs.sh-style snapshot of this broker's replica sizes in DIR/logdirs/ (that format exactly),
        and the dir's capacity beside it in DIR/logdir-capacity/ (the same name; DescribeLogDirs v4's fields,
        which the tool does not print). None once the dir is offline: the broker is halting."""
        sim_ms = self.wall_ms()
        disk, held, found = self.replicas.log_dir()
        if not disk.online:
            return None
        sizes = tuple(ReplicaSize(tp.topic, tp.partition, size, lag) for tp, size, lag in found)
        report = LogDirsReport((BrokerLogDirs(self.id, (LogDir(disk.path, None, sizes),)),), timestamp_ms=sim_ms)
        capacity = {"version": 4, "broker": self.id, "timestamp": sim_ms, "results": [
            {"logDir": disk.path, "errorCode": 0, "totalBytes": disk.total_bytes(),
             "usableBytes": disk.usable_bytes(held)}]}
        snapshot = self._write_kept(self.settings.lab_dir / "logdirs", sim_ms, encode_log_dirs(report))
        self._write_kept(self.settings.lab_dir / CAPACITY_FOLDER, sim_ms, capacity)  # second: its snapshot exists
        return snapshot

    def _write_kept(self, folder: Path, sim_ms: int, doc: dict[str, Any]) -> Path:
        """DIR/<folder>/broker-<id>-<ms>.json, whole or not at all; the newest LOG_DIR_FILES_KEPT stay."""
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"broker-{self.id}-{sim_ms}.json"
        tmp = target.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, separators=(",", ":")))
        tmp.replace(target)
        mine = sorted(folder.glob(f"broker-{self.id}-*.json"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
        for old in mine[:-LOG_DIR_FILES_KEPT]:
            old.unlink(missing_ok=True)
        return target

    # -- follower fetching -------------------------------------------------------------------------------

    def _ensure_fetchers(self) -> None:
        with self._fetchers_lock:
            for leader in self.replicas.leaders_followed():
                thread = self._fetchers.get(leader)
                if thread is None or not thread.is_alive():
                    self._fetchers[leader] = self._start_thread(self._fetch_loop, f"fetcher-{leader}", leader)

    def _fetch_loop(self, leader: int) -> None:
        client: RpcClient | None = None
        address = None
        idle_since = time.monotonic()
        stretch = self.clock.stretch
        while not self.stopping.is_set():
            plan, generation = self.replicas.fetch_plan(leader)
            if not plan:
                if time.monotonic() - idle_since > 5.0:
                    break  # nothing follows this leader any more; restarted on demand
                time.sleep(0.1)
                continue
            idle_since = time.monotonic()
            known = self.replicas.brokers.get(leader)
            if known is None:
                time.sleep(0.1)
                continue
            if client is None or address != (known.host, known.port):
                if client is not None:
                    client.close()
                address = (known.host, known.port)
                client = RpcClient(known.host, known.port, timeout=10.0 + self.replicas.fetch_wait)
            try:
                reply = client.call("fetch", {"replica_id": self.id, "partitions": plan, "generation": generation,
                                              "max_wait": self.replicas.fetch_wait})
            except (RpcUnavailable, RpcError):
                time.sleep(0.2 * stretch)
                continue
            received = self.replicas.apply_fetch(plan, reply)
            asked = sum(min(int(entry[4]), FIRST_FETCH_BYTES // 2) for entry in plan)
            # a full answer, or one the leader held until something changed: fetch again soon; a quota-limited
            # one: tokens accrue slowly, do not spin
            time.sleep((0.02 if reply.get("waited") or (received and received >= 0.9 * asked) else 0.1) * stretch)
        if client is not None:
            client.close()
        with self._fetchers_lock:
            if self._fetchers.get(leader) is threading.current_thread():
                del self._fetchers[leader]
