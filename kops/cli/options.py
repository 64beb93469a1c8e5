"""Options shared by the commands that talk to a cluster, and how they become a ZooKeeper session.

Secrets never go on the command line (where `ps` shows them): ZooKeeper credentials come from the
environment, `KOPS_ZK_DIGEST=user:password` or `KOPS_ZK_SASL=user:password` (+ `KOPS_ZK_SASL_MECHANISM`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from kops.errors import UsageError
from kops.units import parse_rate
from kops.zk_layout.client import ZkAuth, ZkSettings, ZkTls
from kops.zk_layout.connect import parse_connect

T = TypeVar("T")


class OutputFormat(str, Enum):
    text = "text"
    json = "json"


SnapshotFile = Annotated[Path | None, typer.Option(
    "--snapshot", help="Plan offline from a kops-snapshot/1 file (kops state --out FILE): no cluster is "
                       "reached.")]
Zookeeper = Annotated[
    str | None,
    typer.Option(
        "--zookeeper",
        "-z",
        help="ZooKeeper connect string of the cluster, HOST:PORT[,HOST:PORT][/chroot] (Kafka's zookeeper.connect).",
        show_default=False,
    ),
]
BootstrapServer = Annotated[
    str | None,
    typer.Option(
        "--bootstrap-server",
        "-b",
        help="Reach the cluster through Kafka's Admin API: HOST:PORT[,HOST:PORT...] (KRaft, Kafka 4, or any 2.4+). "
             "With -z too, the Admin API is used.",
        show_default=False,
    ),
]
CommandConfig = Annotated[
    Path | None,
    typer.Option("--command-config", help="Kafka client properties for the Admin API (security.protocol, "
                                          "sasl.mechanism, sasl.jaas.config, ssl.*), as Kafka's own tools take them."),
]
ConnectTimeout = Annotated[
    float,
    typer.Option("--connect-timeout", help="Seconds to wait for ZooKeeper, or for a broker to answer, before giving up "
                                           "(exit 1).", min=0.1),
]
SessionTimeout = Annotated[
    float, typer.Option("--session-timeout", help="Seconds a killed or paused kops keeps the cluster lock: the "
                                                  "ZooKeeper session timeout, or the lease in __kops.", min=1.0)
]
TlsCa = Annotated[Path | None, typer.Option("--zk-tls-ca", help="CA bundle: connect to ZooKeeper over TLS.")]
TlsCert = Annotated[Path | None, typer.Option("--zk-tls-cert", help="Client certificate for ZooKeeper TLS.")]
TlsKey = Annotated[Path | None, typer.Option("--zk-tls-key", help="Client key for ZooKeeper TLS.")]
Format = Annotated[
    OutputFormat, typer.Option("--format", "-f", help="text for people, json for machines.", case_sensitive=False)
]


def _credentials(variable: str) -> tuple[str, str] | None:
    value = os.environ.get(variable)
    if not value:
        return None
    user, sep, password = value.partition(":")
    if not sep or not user:
        raise UsageError(f"{variable} must be user:password", where=variable)
    return user, password


def parse_option(parse: Callable[[str], T], value: str, option: str) -> T:
    """An option's value through a kops.units parser; a bad one is a usage error naming the option."""
    try:
        return parse(value)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None


Throttle = Annotated[str | None, typer.Option(
    "--throttle", help="Replication throttle per broker, e.g. 50MiB/s, instead of the plan's (a rollback: the "
                       "execution's); with --resume, for the moves in flight too. A broker the plan caps lower keeps "
                       "its cap.")]


def parse_throttle(value: str | None) -> int | None:
    """--throttle RATE (e.g. 50MiB/s) as bytes per second; None when not given."""
    if value is None:
        return None
    rate = parse_option(parse_rate, value, "--throttle")
    if rate == 0:
        raise UsageError("--throttle: 0 would stop replication altogether", hint="give a rate such as 50MiB/s")
    return rate


def zk_settings(
    zookeeper: str | None,
    connect_timeout: float = 10.0,
    session_timeout: float = 30.0,
    tls_ca: Path | None = None,
    tls_cert: Path | None = None,
    tls_key: Path | None = None,
) -> ZkSettings:
    if not zookeeper:
        raise UsageError("no cluster given", hint="pass -z HOST:PORT[/chroot]")
    parse_connect(zookeeper)  # validate early: one clear line for a malformed string
    auth = None
    digest = _credentials("KOPS_ZK_DIGEST")
    sasl = _credentials("KOPS_ZK_SASL")
    if digest and sasl:
        raise UsageError("set only one of KOPS_ZK_DIGEST and KOPS_ZK_SASL")
    if digest:
        auth = ZkAuth("digest", *digest)
    elif sasl:
        auth = ZkAuth("sasl", *sasl, mechanism=os.environ.get("KOPS_ZK_SASL_MECHANISM", "DIGEST-MD5"))
    tls = None
    if tls_ca or tls_cert or tls_key:
        for option, path in (("--zk-tls-ca", tls_ca), ("--zk-tls-cert", tls_cert), ("--zk-tls-key", tls_key)):
            if path is not None and not path.is_file():
                raise UsageError(f"{option}: no such file {path}")
        tls = ZkTls(
            ca_file=str(tls_ca) if tls_ca else None,
            cert_file=str(tls_cert) if tls_cert else None,
            key_file=str(tls_key) if tls_key else None,
        )
    return ZkSettings(
        connect=zookeeper, connect_timeout=connect_timeout, session_timeout=session_timeout, auth=auth, tls=tls
    )


# Naming clusters through declarations (kops validate, plan, and the commands after them).
Inventory = Annotated[
    Path | None,
    typer.Option("--inventory", "-i", help="Ansible YAML inventory (file or folder) of Kafka clusters."),
]
Limit = Annotated[str | None, typer.Option("--limit", "-l", help="Only these clusters (an Ansible host pattern).")]
CapacityFile = Annotated[
    Path | None,
    typer.Option("--capacity", help="Cruise Control's broker capacity file (capacity.json: DISK in MB, NW_IN and "
                                    "NW_OUT in KB/s, broker -1 the default); replaces the inventory's capacity."),
]
ExtraVars = Annotated[
    list[str] | None,
    typer.Option("--extra-vars", "-e",
                 help="Extra variables: key=value, @file.yml or a JSON/YAML mapping. Repeatable."),
]
