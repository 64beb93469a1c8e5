"""A lab cluster of real Apache Kafka: 3.9 brokers in ZooKeeper mode, or a Kafka 4 KRaft cluster.

Same folder contract as the kops engine (`kops.lab.kops_engine`): `<dir>/lab.json` describes the lab, `<dir>/bootstrap`
holds the bootstrap servers and, for kafka-3.9, `<dir>/zookeeper` the connect string with its chroot. Each
node is one JVM from the fetched jars (`kops.lab.kafka_dist`), its settings in `<dir>/nodes/<id>/`, its logs in
`<dir>/logs/node-<id>/server.log` (stdout, for the JVM's own complaints, in `<dir>/logs/node-<id>.out`).

With `tls=True` (Kafka 4), the brokers also listen with SSL (client certificates required) and SASL_SSL
(SCRAM-SHA-512), and the folder holds what a client needs: `<dir>/tls/` (the lab CA, client certificates and
stores, `kops.lab.tls`), `<dir>/bootstrap-ssl` and `<dir>/bootstrap-sasl-ssl`, and client properties for each,
`<dir>/client-ssl.properties` and `<dir>/client-sasl-ssl.properties`.

Broker ids are 1..N with racks round-robin, as on the kops engine. KRaft: a quorum of 1 or 3 controllers,
either combined with brokers 1..Q or dedicated nodes 1001..100Q; storage formatted with Kafka's own
StorageTool under one cluster id.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kops.errors import EnvironmentProblem, KopsError, UsageError
from kops.lab import kafka_config as cfg
from kops.lab.folder import STATE_FILE, LabFolder, rack_layout
from kops.lab.kafka_dist import Distribution, require
from kops.lab.ports import free_port
from kops.lab.processes import cmdline_contains, die_with_parent, pid_alive, signal_and_wait
from kops.lab.tls import CLIENT_FILES, TLS_DIR, write_client_files, write_lab_tls
from kops.lab.zookeeper import ZooKeeperServer

BOOTSTRAP_FILE = "bootstrap"
CONNECT_FILE = "zookeeper"
CHROOT = "/kops-lab"
KAFKA_MAIN = "kafka.Kafka"
STARTED_MARKERS = ("Kafka Server started", "] started (kafka.server.KafkaServer)")
DEDICATED_CONTROLLER_BASE = 1000


@dataclass
class KafkaLabState:
    engine: str
    version: str
    bootstrap: str
    connect: str | None  # ZooKeeper connect string with chroot (kafka-3.9)
    managed_zookeeper: bool
    cluster_id: str | None
    nodes: dict[int, dict[str, Any]] = field(default_factory=dict)  # id -> Node fields (lab.json)
    pids: dict[int, int] = field(default_factory=dict)
    ingest: dict[str, int] = field(default_factory=dict)  # topic -> pid of its steady producer
    heap_mb: int = 384
    tls: bool = False  # SSL and SASL_SSL listeners too (kafka-4)
    log_dirs_per_broker: int = 1  # each broker's `log.dirs` (several: JBOD); a dedicated controller keeps one

    @property
    def racks(self) -> dict[int, str]:
        return {i: str(n["rack"]) for i, n in self.nodes.items() if cfg.BROKER in n["roles"]}

    def node(self, node_id: int) -> cfg.Node:
        raw = self.nodes[node_id]
        return cfg.Node(int(raw["id"]), tuple(raw["roles"]), int(raw["port"]), raw.get("controller_port"),
                        raw.get("rack"), raw.get("sasl_port"), raw.get("ssl_port"), raw.get("sasl_ssl_port"))

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> KafkaLabState:
        doc = json.loads(text)
        doc["nodes"] = {int(k): v for k, v in doc.get("nodes", {}).items()}
        doc["pids"] = {int(k): v for k, v in doc.get("pids", {}).items()}
        return cls(**doc)


def plan_nodes(brokers: int, racks: int, controllers: int, dedicated: bool, kraft: bool,
               rack_of: Mapping[int, str] | None = None, tls: bool = False) -> list[cfg.Node]:
    """Ids, roles and ports of every node: brokers 1..N (or `rack_of`'s ids), and for KRaft the controller
    quorum (combined: the first `controllers` brokers); `tls`: brokers get SSL and SASL_SSL ports too."""
    nodes = []
    for index, (b, rack) in enumerate(rack_layout(brokers, racks, rack_of).items()):
        roles: tuple[str, ...] = (cfg.BROKER,)
        controller_port = None
        if kraft and not dedicated and index < controllers:
            roles, controller_port = (cfg.BROKER, cfg.CONTROLLER), free_port()
        tls_ports = (free_port(), free_port()) if tls else (None, None)
        nodes.append(cfg.Node(b, roles, free_port(), controller_port, rack, free_port(), *tls_ports))
    if kraft and dedicated:
        nodes += [cfg.Node(DEDICATED_CONTROLLER_BASE + c, (cfg.CONTROLLER,), free_port())
                  for c in range(1, controllers + 1)]
    return nodes


class KafkaLab(LabFolder):
    """Real Kafka processes on loopback, started and stopped for real."""

    kind = "node"
    archive_to: Path | None = None  # brokers write a class archive here when they exit cleanly (class_share.py)

    def state(self) -> KafkaLabState:
        return self._read_state(KafkaLabState.from_json)

    def distribution(self, state: KafkaLabState | None = None) -> Distribution:
        state = state or self.state()
        dist = require(state.engine)
        if dist.version != state.version:
            raise EnvironmentProblem(f"this lab runs Kafka {state.version}, the installed {state.engine} is "
                                     f"{dist.version}",
                                     where=str(self.state_file), hint="run: kops lab down, then kops lab up")
        return dist

    # -- up / down ---------------------------------------------------------------------------------------

    def up(self, engine: str, brokers: int = 3, racks: int = 3, controllers: int = 1, dedicated: bool = False,
           zookeeper: str | None = None, heap_mb: int = 384, timeout: float = 120.0,
           rack_of: Mapping[int, str] | None = None, tls: bool = False,
           log_dirs_per_broker: int = 1) -> KafkaLabState:
        """Start the nodes; `rack_of` (broker id -> rack) replaces ids 1..N and round-robin racks; `tls`: SSL and
        SASL_SSL listeners too (Kafka 4), and the files a client needs for them; `log_dirs_per_broker`: each
        broker's log dirs (JBOD when more than one)."""
        dist = require(engine)
        brokers = len(rack_of) if rack_of else brokers
        self._check_shape(brokers, racks, controllers, dedicated, dist)
        if log_dirs_per_broker < 1:
            raise UsageError(f"--log-dirs-per-broker must be at least 1, not {log_dirs_per_broker}")
        if tls and dist.zookeeper_mode:
            raise UsageError("--tls needs --engine kafka-4", hint="the TLS lab's SCRAM user lives in KRaft metadata")
        if self.exists():
            raise UsageError("a lab is already up here", where=str(self.directory), hint="run: kops lab down first")
        self.directory.mkdir(parents=True, exist_ok=True)
        self._clear_previous()
        state = KafkaLabState(engine, dist.version, "", None, zookeeper is None and dist.zookeeper_mode, None,
                              heap_mb=heap_mb, tls=tls, log_dirs_per_broker=log_dirs_per_broker)
        nodes = plan_nodes(brokers, racks, controllers, dedicated, kraft=not dist.zookeeper_mode, rack_of=rack_of,
                           tls=tls)
        if tls:
            write_lab_tls(self.directory.resolve() / TLS_DIR)
        state.nodes = {n.id: asdict(n) for n in nodes}
        state.bootstrap = ",".join(f"127.0.0.1:{n.port}" for n in nodes if n.is_broker)
        try:  # whatever fails after this point, nothing this call started is left running
            self._save(state)
            if dist.zookeeper_mode:
                state.connect = self._zookeeper(zookeeper)
            else:
                state.cluster_id = self._format_storage(dist, state, nodes)
            self._write_node_files(dist, state, nodes)
            self._save(state)
            for node in nodes:
                self._spawn(dist, state, node.id)
            self._save(state)
            self.wait_started(state, [n.id for n in nodes], timeout)
            self.wait_registered(state, set(state.racks), timeout)
            (self.directory / BOOTSTRAP_FILE).write_text(state.bootstrap + "\n")
            if state.connect:
                (self.directory / CONNECT_FILE).write_text(state.connect + "\n")
            if tls:
                write_client_files(self.directory.resolve(), self.listener_bootstrap("ssl_port", state),
                                   self.listener_bootstrap("sasl_ssl_port", state))
        except BaseException:
            self.down()
            raise
        return state

    def _clear_previous(self) -> None:
        """A new cluster starts from empty folders: a previous lab's meta.properties (another cluster id, or KRaft
        data under a ZooKeeper-mode broker) makes Kafka refuse to start, and its old logs would read as "started"."""
        shutil.rmtree(self.directory / "nodes", ignore_errors=True)
        shutil.rmtree(self.directory / TLS_DIR, ignore_errors=True)
        for old in (self.directory / "logs").glob("node-*"):
            if old.is_dir():
                shutil.rmtree(old, ignore_errors=True)
            else:
                old.unlink(missing_ok=True)

    @staticmethod
    def _check_shape(brokers: int, racks: int, controllers: int, dedicated: bool, dist: Distribution) -> None:
        if brokers < 1 or racks < 1:
            raise UsageError("--brokers and --racks must be at least 1")
        if dist.zookeeper_mode:
            return
        if controllers not in (1, 3):
            raise UsageError(f"--controllers must be 1 or 3, not {controllers}")
        if not dedicated and controllers > brokers:
            raise UsageError(f"{controllers} combined controllers need at least {controllers} brokers",
                             hint="add brokers or pass --dedicated-controllers")

    def _zookeeper(self, zookeeper: str | None) -> str:
        if zookeeper is None:
            server = ZooKeeperServer(self.directory / "zk", detached=self.detached).start()
            return server.connect + CHROOT
        return zookeeper if "/" in zookeeper else zookeeper + CHROOT

    def node_dir(self, node_id: int) -> Path:
        return self.directory / "nodes" / str(node_id)

    def log_dirs(self, node_id: int, state: KafkaLabState | None = None) -> list[Path]:
        """The node's log dirs, as its `log.dirs` lists them (absolute: what the broker reports)."""
        state = state or self.state()
        node = state.node(node_id)
        return cfg.log_dirs(self.node_dir(node_id).resolve(), state.log_dirs_per_broker if node.is_broker else 1)

    def server_log(self, node_id: int) -> Path:
        return self.directory / "logs" / f"node-{node_id}" / "server.log"

    def _write_node_files(self, dist: Distribution, state: KafkaLabState, nodes: list[cfg.Node]) -> None:
        brokers = len([n for n in nodes if n.is_broker])
        voters = [n for n in nodes if n.is_controller]
        for node in nodes:
            folder = self.node_dir(node.id)
            folder.mkdir(parents=True, exist_ok=True)
            data = cfg.log_dirs(folder.resolve(), state.log_dirs_per_broker if node.is_broker else 1)
            if dist.zookeeper_mode:
                assert state.connect is not None
                props = cfg.zookeeper_mode_properties(node, data, state.connect, brokers)
            else:
                props = cfg.kraft_properties(node, data, voters, brokers,
                                             self.directory.resolve() / TLS_DIR if state.tls else None)
            (folder / "server.properties").write_text(cfg.render_properties(props))
            log = self.server_log(node.id)
            log.parent.mkdir(parents=True, exist_ok=True)
            text = cfg.log4j2_config(log) if dist.log4j2 else cfg.log4j1_config(log)
            (folder / "log.properties").write_text(text)

    def _format_storage(self, dist: Distribution, state: KafkaLabState, nodes: list[cfg.Node]) -> str:
        """One cluster id from Kafka's StorageTool, then `format` of every node's log dir with it."""
        cluster_id = cfg.random_cluster_id()
        self._write_node_files(dist, state, nodes)
        scram = cfg.scram_format_arguments() if state.tls else []
        for node in nodes:
            self.run_tool(dist, "kafka.tools.StorageTool", "format", "-t", cluster_id,
                          "-c", str(self.node_dir(node.id) / "server.properties"), *scram)
        return cluster_id

    def run_tool(self, dist: Distribution, main_class: str, *args: str, timeout: float = 120.0) -> str:
        """Run one of Kafka's own tools; its stdout, or one clear error with its last line."""
        log_dir = self.directory / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        config = log_dir / ("tools-log4j2.properties" if dist.log4j2 else "tools-log4j.properties")
        config.write_text(cfg.tool_log_config(dist.log4j2, log_dir / "tools.log"))
        done = subprocess.run(dist.java(main_class, *args, heap_mb=256, log_config=config, logs_dir=log_dir),
                              capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            last = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()][-1:] or ["(no output)"]
            raise EnvironmentProblem(f"{main_class.rsplit('.', 1)[-1]} failed: {last[0][:300]}",
                                     where=str(log_dir / "tools.log"))
        return done.stdout

    def down(self) -> list[int]:
        """SIGKILL every node and steady producer, stop a ZooKeeper we started; the nodes that were stopped."""
        try:
            state: KafkaLabState | None = self.state()
        except KopsError:
            state = None
        if state is not None:
            for pid in state.ingest.values():
                if pid_alive(pid) and cmdline_contains(pid, b"kops.lab.ingest"):
                    signal_and_wait(pid, signal.SIGKILL, 5.0)
        stopped = self._kill_everything(state, 10.0)
        left = [pid for pid in (state.pids.values() if state else []) if self._is_node(pid)]
        if left:
            raise EnvironmentProblem(f"Kafka processes {left} survived SIGKILL", where=str(self.directory))
        for name in (STATE_FILE, BOOTSTRAP_FILE, CONNECT_FILE, *CLIENT_FILES):
            (self.directory / name).unlink(missing_ok=True)
        return stopped

    # -- nodes -------------------------------------------------------------------------------------------

    def _owns(self, pid: int) -> bool:
        return self._is_node(pid)

    def _ids(self, state: KafkaLabState) -> list[int]:
        return sorted(state.nodes)

    def _is_node(self, pid: int) -> bool:
        return pid_alive(pid) and cmdline_contains(pid, str(self.directory.resolve() / "nodes").encode())

    def _spawn(self, dist: Distribution, state: KafkaLabState, node_id: int) -> None:
        folder = self.node_dir(node_id).resolve()
        logs = self.server_log(node_id).parent.resolve()
        command = dist.java(KAFKA_MAIN, str(folder / "server.properties"), heap_mb=state.heap_mb,
                            log_config=folder / "log.properties", logs_dir=logs, archive_to=self.archive_to)
        with open(self.directory / "logs" / f"node-{node_id}.out", "ab") as out:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=self.detached,
                                       preexec_fn=None if self.detached else die_with_parent)
        self._processes[node_id] = process
        self._started.append(process.pid)
        state.pids[node_id] = process.pid

    def sasl_bootstrap(self, state: KafkaLabState | None = None) -> str:
        """Bootstrap servers of the brokers' SASL_PLAINTEXT listeners (user cfg.LAB_USER, password cfg.LAB_PASSWORD)."""
        return self.listener_bootstrap("sasl_port", state)

    def listener_bootstrap(self, port: str, state: KafkaLabState | None = None) -> str:
        """Bootstrap servers of one listener of the brokers, named by its Node field (sasl_port, ssl_port,
        sasl_ssl_port); empty when the lab has none."""
        state = state or self.state()
        found = [getattr(state.node(b), port) for b in sorted(state.racks)]
        return ",".join(f"127.0.0.1:{p}" for p in found if p is not None)

    def live_bootstrap(self, state: KafkaLabState | None = None) -> str:
        """Bootstrap servers of the brokers running and not paused (all of them when none is)."""
        state = state or self.state()
        live = [f"127.0.0.1:{state.node(b).port}" for b in sorted(state.racks)
                if self.running(b, state) and not self.paused(b, state)]
        return ",".join(live) or state.bootstrap

    def _log_size(self, node_id: int) -> int:
        try:
            return self.server_log(node_id).stat().st_size
        except FileNotFoundError:
            return 0

    def wait_started(self, state: KafkaLabState, node_ids: list[int], timeout: float,
                     offsets: dict[int, int] | None = None) -> None:
        """Until each node's log says it started (after `offsets`, for a restart); a node that dies is reported."""
        deadline = time.monotonic() + timeout
        pending = set(node_ids)
        while pending:
            for node_id in sorted(pending):
                text = self._read_log(node_id, (offsets or {}).get(node_id, 0))
                if any(marker in text for marker in STARTED_MARKERS):
                    pending.discard(node_id)
                elif not pid_alive(state.pids.get(node_id, -1)):
                    raise EnvironmentProblem(f"Kafka node {node_id} exited during startup",
                                             where=str(self.server_log(node_id)),
                                             hint=f"last lines: {self.log_tail(node_id)}")
            if pending and time.monotonic() > deadline:
                raise EnvironmentProblem(f"Kafka nodes {sorted(pending)} did not start within {timeout:g}s",
                                         where=str(self.directory / "logs"), hint="see the nodes' server.log")
            if pending:
                time.sleep(0.2)

    def _read_log(self, node_id: int, offset: int) -> str:
        try:
            with open(self.server_log(node_id), "rb") as f:
                f.seek(offset)
                return f.read().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def wait_registered(self, state: KafkaLabState, brokers: set[int], timeout: float) -> None:
        """Until the cluster's metadata lists `brokers` (unfenced) and names a controller."""
        from kops.lab.kafka_client import live_brokers  # kafka-python is imported only when a real lab runs

        deadline = time.monotonic() + timeout
        while True:
            found = live_brokers(state.bootstrap)
            if found is not None and brokers <= found:
                return
            for node_id in sorted(brokers - (found or set())):
                if not pid_alive(state.pids.get(node_id, -1)):
                    raise EnvironmentProblem(f"Kafka node {node_id} exited before registering",
                                             where=str(self.server_log(node_id)),
                                             hint=f"last lines: {self.log_tail(node_id)}")
            if time.monotonic() > deadline:
                raise EnvironmentProblem(f"brokers {sorted(brokers - (found or set()))} did not register within "
                                         f"{timeout:g}s", where=str(self.directory / "logs"))
            time.sleep(0.3)

    def log_tail(self, node_id: int, lines: int = 3) -> str:
        text = self._read_log(node_id, max(0, self._log_size(node_id) - 8192))
        out = self.directory / "logs" / f"node-{node_id}.out"
        if out.exists():
            text += out.read_text(errors="replace")[-4096:]
        tail = [line for line in text.splitlines() if line.strip()][-lines:]
        return " | ".join(tail) or "(empty)"

    def _check_node(self, state: KafkaLabState, node_id: int) -> None:
        if node_id not in state.nodes:
            raise UsageError(f"node {node_id} is not part of this lab", hint=f"nodes are {sorted(state.nodes)}")

    def start_broker(self, node_id: int, timeout: float = 90.0) -> None:
        state = self.state()
        self._check_node(state, node_id)
        if self.running(node_id, state):
            raise UsageError(f"node {node_id} is already running")
        dist = self.distribution(state)
        if dist.zookeeper_mode:  # a killed broker's registration lives until its session expires
            self._wait_unregistered(state, node_id, timeout)
        offset = self._log_size(node_id)
        self._spawn(dist, state, node_id)
        self._save(state)
        self.wait_started(state, [node_id], timeout, {node_id: offset})
        if state.node(node_id).is_broker:
            self.wait_registered(state, {node_id}, timeout)

    def _wait_unregistered(self, state: KafkaLabState, node_id: int, timeout: float) -> None:
        from kops.zk_layout.client import ZkClient, ZkSettings
        from kops.zk_layout.paths import broker

        assert state.connect is not None
        deadline = time.monotonic() + timeout
        with ZkClient(ZkSettings(state.connect, connect_timeout=10.0)) as client:
            while client.exists(broker(node_id)) is not None:
                if time.monotonic() > deadline:
                    raise EnvironmentProblem(f"broker {node_id}'s old registration did not expire",
                                             where=state.connect)
                time.sleep(0.2)

    def stop_broker(self, node_id: int, timeout: float = 60.0) -> None:
        """Controlled shutdown (SIGTERM): Kafka moves leadership away before the process exits."""
        self._signal(node_id, signal.SIGTERM, timeout)

    def kill_broker(self, node_id: int) -> None:
        """A crash (SIGKILL)."""
        self._signal(node_id, signal.SIGKILL, 10.0)

    # -- traffic -----------------------------------------------------------------------------------------

    def produce(self, topic: str, count: int, partition: int | None = None) -> int:
        """`count` bytes of real records, acknowledged by all in-sync replicas; how many records."""
        from kops.lab.kafka_client import produce

        return produce(self.state().bootstrap, topic, count, partition)

    def set_ingest(self, topic: str, rate: float) -> None:
        """A steady producer of `rate` bytes/s for `topic` in a background process (0 stops it)."""
        state = self.state()
        old = state.ingest.pop(topic, None)
        if old is not None and pid_alive(old) and cmdline_contains(old, b"kops.lab.ingest"):
            signal_and_wait(old, signal.SIGTERM, 5.0)
        if rate > 0:
            with open(self.directory / "logs" / f"ingest-{topic}.out", "ab") as out:
                process = subprocess.Popen(
                    [sys.executable, "-m", "kops.lab.ingest", state.bootstrap, topic, repr(rate)],
                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=self.detached,
                    preexec_fn=None if self.detached else die_with_parent)
            state.ingest[topic] = process.pid
        self._save(state)

