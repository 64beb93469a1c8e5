"""Connecting to a cluster through its brokers, as Kafka's own tools do: bootstrap servers plus an optional
client properties file (`--command-config`, Kafka's format) for TLS and SASL. Secrets come from that file or
the environment, never from the command line. TLS stores are read by `kops.cluster.admin.stores` into an SSLContext
(`kops.cluster.admin.tls`); which properties kops reads is listed in docs/cli.md.
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient
from kafka.errors import KafkaError, KafkaTimeoutError

from kops.cluster.admin.tls import ClientTls, client_tls, tls_problem
from kops.errors import ConnectionFailed, UsageError
from kops.model.servers import host_port, parse_servers

logging.getLogger("kafka").addHandler(logging.NullHandler())
logging.getLogger("kafka").propagate = False  # kafka-python's connection chatter is not kops's output

# Kafka client property -> kafka-python argument, for the ones that carry over as they are.
DIRECT = {
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "request.timeout.ms": "request_timeout_ms",
}
JAAS = re.compile(r'(username|password)\s*=\s*"([^"]*)"')
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


class ClientProperties(dict[str, str]):
    """Client properties and the file they came from, which errors about them name."""

    source: str | None = None


@dataclass(frozen=True)
class AdminSettings:
    bootstrap: str
    properties: dict[str, str] = field(default_factory=dict)
    timeout_ms: int = 15000  # each request
    connect_timeout_ms: int = 10000  # finding a broker that answers (kops's --connect-timeout)

    @cached_property
    def tls(self) -> ClientTls | None:
        """The TLS set-up of the properties (None without SSL/SASL_SSL), built once for every client of these
        settings."""
        return client_tls(self.properties, getattr(self.properties, "source", None))

    def client_arguments(self) -> dict[str, Any]:
        protocol = self.properties.get("security.protocol", "PLAINTEXT").strip().upper()
        if protocol not in PROTOCOLS:
            raise UsageError(f"security.protocol={protocol} is not one of {', '.join(PROTOCOLS)}",
                             where=getattr(self.properties, "source", None))
        out: dict[str, Any] = {"bootstrap_servers": servers(self.bootstrap), "client_id": "kops",
                               "request_timeout_ms": self.timeout_ms, "bootstrap_timeout_ms": self.connect_timeout_ms,
                               "reconnect_backoff_max_ms": 1000}
        for key, value in self.properties.items():
            if key in DIRECT:
                out[DIRECT[key]] = value.strip()
            elif key == "sasl.jaas.config":
                found = dict(JAAS.findall(value))
                out["sasl_plain_username"] = found.get("username")
                out["sasl_plain_password"] = found.get("password")
        out["security_protocol"] = protocol
        if self.tls is not None:
            out["ssl_context"] = self.tls.context
        if "request_timeout_ms" in out:
            out["request_timeout_ms"] = int(out["request_timeout_ms"])
        return out


def servers(bootstrap: str) -> list[str]:
    """`host:port,host:port` as its servers (Kafka's bootstrap.servers form); a bad one is one line (exit 1),
    not kafka-python's ValueError."""
    return parse_servers(bootstrap)


def accepts(server: str, timeout_ms: int) -> bool:
    """Whether HOST:PORT takes a TCP connection (a listening broker, paused or not), within `timeout_ms`: a client
    bootstrapped through one refusing server alone (a stopped broker) retries it for its whole bootstrap timeout."""
    try:
        with socket.create_connection(host_port(server), timeout=max(timeout_ms, 1000) / 1000):
            return True
    except OSError:
        return False


def read_properties(path: Path) -> ClientProperties:
    """Kafka's client properties format: key=value lines, # and ! comments, backslash continuations."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise UsageError(f"cannot read the client properties: {exc.strerror}", where=str(path)) from None
    props = ClientProperties()
    props.source = str(path)
    for number, line in enumerate(text.replace("\\\n", "").splitlines(), 1):
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        found = re.match(r"([^=:\s]+)\s*[=:]\s*(.*)", line)
        if found is None:
            raise UsageError(f"line {number} is not key=value", where=f"{path}:{number}",
                             hint="Kafka's client properties format, e.g. security.protocol=SASL_SSL")
        props[found.group(1)] = found.group(2)
    return props


def connect(settings: AdminSettings, through: str | None = None) -> KafkaAdminClient:
    """A connected admin client (through those servers alone, when given), or one line saying why not (exit 1)."""
    arguments = settings.client_arguments()
    where = through or settings.bootstrap
    arguments["bootstrap_servers"] = servers(where)
    refusals = _AuthenticationRefusals()
    logging.getLogger("kafka").addHandler(refusals)
    try:
        return KafkaAdminClient(**arguments)
    except KafkaTimeoutError:
        if refusals.reason:  # the brokers answered, and refused the credentials: say that, not "no answer"
            raise ConnectionFailed(f"authentication failed: {refusals.reason}", where=where,
                                   hint="check the credentials in --command-config (sasl.jaas.config) "
                                        "and sasl.mechanism") from None
        _raise_tls_problem(settings, where)
        for server in servers(where) if len(servers(where)) > 1 else []:
            # kafka-python gives up when the server it picks first is silent (a paused broker, still listening,
            # whose handshake outlasts the bootstrap timeout) instead of trying the next: each alone, in turn
            with contextlib.suppress(ConnectionFailed):
                return connect(settings, server)
        raise ConnectionFailed("no broker answered", where=where,
                               hint="check the bootstrap servers and --command-config (security.protocol)") from None
    except KafkaError as exc:
        _raise_tls_problem(settings, where)
        raise ConnectionFailed(f"cannot connect: {exc}", where=where,
                               hint="check --command-config (credentials, TLS)") from None
    finally:
        logging.getLogger("kafka").removeHandler(refusals)


def _raise_tls_problem(settings: AdminSettings, where: str) -> None:
    """kafka-python only timed out: when TLS is what failed, one line naming how (see kops.cluster.admin.tls)."""
    if settings.tls is None:
        return
    problem = tls_problem(settings.tls, servers(where), timeout=min(5.0, settings.connect_timeout_ms / 1000))
    if problem is not None:
        raise ConnectionFailed(problem.what, where=where, hint=problem.hint) from None


class _AuthenticationRefusals(logging.Handler):
    """kafka-python retries a refused SASL handshake until its timeout and only logs why: keep the first such
    reason, so the one line says the credentials were refused (kafka-python never logs the secret itself).

    Kafka answers wrong credentials with an error and then closes the connection; kafka-python sometimes sees only
    the close. A connection lost after its ApiVersions exchange, while no broker was ever reached, was lost in the
    SASL exchange that follows it: Kafka's own Java client reports that case as "terminated during
    authentication", and so does kops when nothing better was logged."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.first: str | None = None
        self.closed_in_authentication = False

    @property
    def reason(self) -> str | None:
        if self.first is None and self.closed_in_authentication:
            return "the brokers closed the connection during SASL authentication, as Kafka does on wrong credentials"
        return self.first

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if self.first is None and re.search(r"authenticat|sasl", text, re.I):
            found = re.search(r"(\w*(?:Authentication|Sasl)\w*Error[^\n]*)", text)
            self.first = (found.group(1) if found else text)[:200]
        elif "Connection lost" in str(record.msg) and isinstance(record.args, tuple) and record.args:
            connection = record.args[0]
            if getattr(connection, "broker_version_data", None) is not None and getattr(
                    connection, "sasl_enabled", False):
                self.closed_in_authentication = True


@contextmanager
def admin_session(settings: AdminSettings) -> Iterator[KafkaAdminClient]:
    """A connected admin client, closed on the way out."""
    client = connect(settings)
    try:
        yield client
    finally:
        client.close()
