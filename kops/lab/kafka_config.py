"""What a real Kafka node of the lab is told: server.properties and its logging config, for a 2-core machine.

Kept apart from the processes so the settings can be read (and tested) as plain text. The choices:
- loopback listeners only, one PLAINTEXT port per broker (plus CONTROLLER for KRaft controllers), and a
  SASL_PLAINTEXT port with the PLAIN mechanism and one lab user (LAB_USER, LAB_PASSWORD), so what kops does with
  `--command-config` (right and wrong passwords) is tried on real Kafka;
- with TLS (`KafkaLab.up(..., tls=True)`, Kafka 4 only): an SSL port that requires client certificates (mTLS) and a
  SASL_SSL port with SCRAM-SHA-512 and one user (SCRAM_USER, SCRAM_PASSWORD, created at storage format), both
  with the lab CA's certificates (`kops.lab.tls`); brokers still talk to each other over PLAINTEXT;
- two network and I/O threads, one replica fetcher, a 2 MiB cleaner buffer (the default 128 MiB would sit on
  a 256 MiB heap), 1 MiB segments (the least Kafka 4 accepts), few internal-topic partitions;
- failure noticed within seconds: ZooKeeper session 6 s (3.9), broker session 6 s (KRaft);
- one log dir per node, or several (`log_dirs`: JBOD, `kops lab up --log-dirs-per-broker N`), as Kafka's
  `log.dirs` lists them;
- every log line to files under the node's own folder, none to the terminal.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

BROKER = "broker"
CONTROLLER = "controller"
LAB_USER, LAB_PASSWORD = "kops", "kops-lab-secret"  # the lab's SASL/PLAIN user: a lab on loopback, not a secret
SASL = "SASL_PLAINTEXT"
SSL, SASL_SSL = "SSL", "SASL_SSL"
SCRAM = "SCRAM-SHA-512"
SCRAM_USER, SCRAM_PASSWORD = "alice", "kops-lab-scram-secret"  # the TLS lab's SCRAM user, created at format


def random_cluster_id() -> str:
    """A KRaft cluster id as Kafka's `kafka-storage random-uuid` prints it (Uuid.randomUuid: 16 random bytes in
    URL-safe base64 without padding, never starting with '-', which a command line would read as an option),
    without starting a JVM for it."""
    while True:
        found = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not found.startswith("-"):
            return found


@dataclass(frozen=True)
class Node:
    """One process of a real-Kafka lab: a broker, a KRaft controller, or both (combined)."""

    id: int
    roles: tuple[str, ...]
    port: int  # PLAINTEXT (brokers) or CONTROLLER (dedicated controllers)
    controller_port: int | None = None  # a combined node's CONTROLLER port
    rack: str | None = None
    sasl_port: int | None = None  # brokers: SASL_PLAINTEXT (PLAIN)
    ssl_port: int | None = None  # brokers of a TLS lab: SSL, client certificates required
    sasl_ssl_port: int | None = None  # brokers of a TLS lab: SASL_SSL (SCRAM-SHA-512)

    @property
    def is_broker(self) -> bool:
        return BROKER in self.roles

    @property
    def is_controller(self) -> bool:
        return CONTROLLER in self.roles

    @property
    def quorum_port(self) -> int | None:
        if not self.is_controller:
            return None
        return self.controller_port if self.is_broker else self.port


def common_settings(brokers: int) -> dict[str, str]:
    internal_rf = str(min(3, brokers))
    return {
        "num.network.threads": "2",
        "num.io.threads": "2",
        "background.threads": "2",
        "num.replica.fetchers": "1",
        "num.recovery.threads.per.data.dir": "1",
        "log.cleaner.dedupe.buffer.size": str(2 * 1024 * 1024),
        "log.cleaner.threads": "1",
        "log.segment.bytes": str(1024 * 1024),
        "offsets.topic.num.partitions": "3",
        "offsets.topic.replication.factor": internal_rf,
        "transaction.state.log.num.partitions": "3",
        "transaction.state.log.replication.factor": internal_rf,
        "transaction.state.log.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "false",
        "replica.lag.time.max.ms": "10000",
        "socket.request.max.bytes": str(100 * 1024 * 1024),
    }


def sasl_settings(node: Node) -> tuple[list[str], dict[str, str]]:
    """The broker's SASL_PLAINTEXT listener (none for a node planned without one) and its PLAIN users."""
    if node.sasl_port is None:
        return [], {}
    jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="{LAB_USER}" password="{LAB_PASSWORD}" user_{LAB_USER}="{LAB_PASSWORD}";')
    return [f"{SASL}://127.0.0.1:{node.sasl_port}"], {
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
    }


def tls_settings(node: Node, tls: Path | None) -> tuple[list[str], list[str], dict[str, str]]:
    """A TLS lab broker's SSL (mTLS) and SASL_SSL (SCRAM-SHA-512) listeners: their addresses, protocol map entries
    and settings; nothing for a node without them. `tls` is the folder `kops.lab.tls.write_lab_tls` filled."""
    if tls is None or node.ssl_port is None or node.sasl_ssl_port is None:
        return [], [], {}
    settings: dict[str, str] = {}
    for listener in ("ssl", "sasl_ssl"):
        prefix = f"listener.name.{listener}.ssl."
        settings |= {prefix + "keystore.type": "PEM", prefix + "keystore.location": str(tls / "broker.pem"),
                     prefix + "truststore.type": "PEM", prefix + "truststore.location": str(tls / "ca.pem")}
    settings |= {
        "listener.name.ssl.ssl.client.auth": "required",
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": SCRAM,
        f"listener.name.sasl_ssl.{SCRAM.lower()}.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    }
    listeners = [f"{SSL}://127.0.0.1:{node.ssl_port}", f"{SASL_SSL}://127.0.0.1:{node.sasl_ssl_port}"]
    return listeners, [f"{SSL}:{SSL}", f"{SASL_SSL}:{SASL_SSL}"], settings


def scram_format_arguments() -> list[str]:
    """kafka-storage format's arguments that create the TLS lab's SCRAM user (KRaft keeps SCRAM users in metadata)."""
    return ["--add-scram", f"{SCRAM}=[name={SCRAM_USER},password={SCRAM_PASSWORD}]"]


def log_dirs(folder: Path, count: int) -> list[Path]:
    """A node's log dirs under its folder: `data` alone, or `data-1 ... data-N` (JBOD). Kafka's `log.dirs` takes
    them comma-separated; KRaft's `kafka-storage format` formats each, ZooKeeper mode creates them."""
    if count < 1:
        raise ValueError(f"a node needs at least one log dir, not {count}")
    return [folder / "data"] if count == 1 else [folder / f"data-{i}" for i in range(1, count + 1)]


def zookeeper_mode_properties(node: Node, data: Sequence[Path], zookeeper: str, brokers: int) -> dict[str, str]:
    """A Kafka 3.9 broker in ZooKeeper mode; its controller is elected among the brokers; `data`: its log dirs."""
    sasl_listeners, sasl = sasl_settings(node)
    listeners = ",".join([f"PLAINTEXT://127.0.0.1:{node.port}", *sasl_listeners])
    props = {
        "broker.id": str(node.id),
        "listeners": listeners,
        "advertised.listeners": listeners,
        "inter.broker.listener.name": "PLAINTEXT",
        **sasl,
        "log.dirs": ",".join(map(str, data)),
        "zookeeper.connect": zookeeper,
        "zookeeper.session.timeout.ms": "6000",
        "zookeeper.connection.timeout.ms": "10000",
        **common_settings(brokers),
    }
    if node.rack:
        props["broker.rack"] = node.rack
    return props


def kraft_properties(node: Node, data: Sequence[Path], voters: list[Node], brokers: int,
                     tls: Path | None = None) -> dict[str, str]:
    """A KRaft node; `data`: its log dirs (several: JBOD, which needs metadata.version 3.7-IV2, below the one
    the lab's Kafka 4 formats with); `voters` is the static controller quorum (1 or 3 nodes); `tls`: the TLS lab's
    certificates."""
    listeners, protocols = [], ["CONTROLLER:PLAINTEXT"]
    sasl_listeners, sasl = sasl_settings(node) if node.is_broker else ([], {})
    tls_listeners, tls_protocols, tls_props = tls_settings(node, tls) if node.is_broker else ([], [], {})
    sasl_listeners += tls_listeners
    sasl |= tls_props
    if node.is_broker:
        listeners += [f"PLAINTEXT://127.0.0.1:{node.port}", *sasl_listeners]
        protocols += ["PLAINTEXT:PLAINTEXT", *([f"{SASL}:{SASL}"] if node.sasl_port else []), *tls_protocols]
    if node.is_controller:
        listeners.append(f"CONTROLLER://127.0.0.1:{node.quorum_port}")
    props = {
        "process.roles": ",".join(node.roles),
        "node.id": str(node.id),
        "controller.quorum.voters": ",".join(f"{v.id}@127.0.0.1:{v.quorum_port}" for v in voters),
        "controller.listener.names": "CONTROLLER",
        "listeners": ",".join(listeners),
        "listener.security.protocol.map": ",".join(protocols),
        "log.dirs": ",".join(map(str, data)),
        "broker.session.timeout.ms": "6000",
        "broker.heartbeat.interval.ms": "1000",
        **sasl,
        **common_settings(brokers),
    }
    if node.is_broker:
        props["inter.broker.listener.name"] = "PLAINTEXT"
        props["advertised.listeners"] = ",".join(listeners[:1 + len(sasl_listeners)])
        if node.rack:
            props["broker.rack"] = node.rack
    return props


def render_properties(props: dict[str, str]) -> str:
    return "".join(f"{key}={value}\n" for key, value in props.items())


def log4j2_config(server_log: Path) -> str:
    """Kafka 4: log4j2, everything at INFO into server.log (state changes included)."""
    return "\n".join([
        "status = error",
        "appender.file.type = File",
        "appender.file.name = FILE",
        f"appender.file.fileName = {server_log}",
        "appender.file.layout.type = PatternLayout",
        "appender.file.layout.pattern = [%d] %p %m (%c)%n",
        "rootLogger.level = INFO",
        "rootLogger.appenderRef.file.ref = FILE",
        "logger.kafka.name = org.apache.kafka",
        "logger.kafka.level = INFO",
        "",
    ])


def log4j1_config(server_log: Path) -> str:
    """Kafka 3.9: log4j 1 (reload4j), everything at INFO into server.log (state changes included)."""
    return "\n".join([
        "log4j.rootLogger=INFO, file",
        "log4j.appender.file=org.apache.log4j.FileAppender",
        f"log4j.appender.file.File={server_log}",
        "log4j.appender.file.layout=org.apache.log4j.PatternLayout",
        "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n",
        "log4j.logger.org.apache.zookeeper=WARN",
        "",
    ])


def tool_log_config(log4j2: bool, log_file: Path) -> str:
    """Kafka's command-line tools: warnings and errors to a file, nothing on the terminal but their output."""
    if log4j2:
        return log4j2_config(log_file).replace("rootLogger.level = INFO", "rootLogger.level = WARN")
    return log4j1_config(log_file).replace("log4j.rootLogger=INFO", "log4j.rootLogger=WARN")
