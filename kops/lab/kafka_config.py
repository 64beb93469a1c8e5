"""What a real Kafka node of the lab is told: server.properties and its logging config, for a 2-core machine.

Kept apart from the processes so the settings can be read (and tested) as plain text. The choices:
- loopback listeners only, one PLAINTEXT port per broker (plus CONTROLLER for KRaft controllers);
- two network and I/O threads, one replica fetcher, a 2 MiB cleaner buffer (the default 128 MiB would sit on
  a 256 MiB heap), 1 MiB segments (the least Kafka 4 accepts), few internal-topic partitions;
- failure noticed within seconds: ZooKeeper session 6 s (3.9), broker session 6 s (KRaft);
- every log line to files under the node's own folder, none to the terminal.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

BROKER = "broker"
CONTROLLER = "controller"


@dataclass(frozen=True)
class Node:
    """One process of a real-Kafka lab: a broker, a KRaft controller, or both (combined)."""

    id: int
    roles: tuple[str, ...]
    port: int  # PLAINTEXT (brokers) or CONTROLLER (dedicated controllers)
    controller_port: int | None = None  # a combined node's CONTROLLER port
    rack: str | None = None

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


def zookeeper_mode_properties(node: Node, data: Path, zookeeper: str, brokers: int) -> dict[str, str]:
    """A Kafka 3.9 broker in ZooKeeper mode; its controller is elected among the brokers."""
    props = {
        "broker.id": str(node.id),
        "listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
        "log.dirs": str(data),
        "zookeeper.connect": zookeeper,
        "zookeeper.session.timeout.ms": "6000",
        "zookeeper.connection.timeout.ms": "10000",
        **common_settings(brokers),
    }
    if node.rack:
        props["broker.rack"] = node.rack
    return props


def kraft_properties(node: Node, data: Path, voters: list[Node], brokers: int) -> dict[str, str]:
    """A KRaft node; `voters` is the static controller quorum (1 or 3 nodes)."""
    listeners, protocols = [], ["CONTROLLER:PLAINTEXT"]
    if node.is_broker:
        listeners.append(f"PLAINTEXT://127.0.0.1:{node.port}")
        protocols.append("PLAINTEXT:PLAINTEXT")
    if node.is_controller:
        listeners.append(f"CONTROLLER://127.0.0.1:{node.quorum_port}")
    props = {
        "process.roles": ",".join(node.roles),
        "node.id": str(node.id),
        "controller.quorum.voters": ",".join(f"{v.id}@127.0.0.1:{v.quorum_port}" for v in voters),
        "controller.listener.names": "CONTROLLER",
        "listeners": ",".join(listeners),
        "listener.security.protocol.map": ",".join(protocols),
        "log.dirs": str(data),
        "broker.session.timeout.ms": "6000",
        "broker.heartbeat.interval.ms": "1000",
        **common_settings(brokers),
    }
    if node.is_broker:
        props["inter.broker.listener.name"] = "PLAINTEXT"
        props["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{node.port}"
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
