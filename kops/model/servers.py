"""Kafka's `bootstrap.servers`, `HOST:PORT[,HOST:PORT...]`: how `-b`, an inventory's `bootstrap_servers` and a
plan's `kafka://SERVERS` name a cluster reached through the Admin API. Checked before kafka-python sees it,
which raises a bare ValueError on a port that is not a number and waits out the connect timeout on a port out of
range. A leading `SECURITY_PROTOCOL://` is ignored, as Kafka's Java client and kafka-python ignore it.
"""

from __future__ import annotations

import re

from kops.errors import UsageError

HINT = "give HOST:PORT[,HOST:PORT...], e.g. broker1:9092,broker2:9092; an IPv6 address as [ADDRESS]:PORT"
_SCHEME = re.compile(r"^[A-Za-z_]+://")
_HOST = re.compile(r"\[[0-9A-Za-z:.%]+\]|[^\s\[\]:/,]+")


def parse_servers(text: str) -> list[str]:
    """The servers of a `bootstrap.servers` string, each checked; one line naming the first bad one otherwise."""
    found = [s.strip() for s in text.split(",") if s.strip()]
    if not found:
        raise UsageError("no bootstrap server given", where=repr(text), hint=HINT)
    for server in found:
        problem = server_problem(server)
        if problem is not None:
            raise UsageError(f"bootstrap server {server!r}: {problem}", where=text.strip(), hint=HINT)
    return found


def host_port(server: str) -> tuple[str, int]:
    """A checked `HOST:PORT` (`parse_servers`) as a socket address: the scheme and an IPv6 address's brackets off."""
    host, _, port = _SCHEME.sub("", server.strip()).rpartition(":")
    return host.strip("[]"), int(port)


def server_problem(server: str) -> str | None:
    """What is wrong with one `HOST:PORT`; None when nothing is."""
    bare = _SCHEME.sub("", server.strip())
    host, colon, port = bare.rpartition(":")
    if not colon or bare.endswith("]"):
        return "no port"
    if not host:
        return "no host"
    if not _HOST.fullmatch(host):
        return ("an IPv6 address goes in brackets" if ":" in host and "[" not in host
                else f"{host!r} is not a host name or address")
    if not port.isascii() or not port.isdigit():
        return f"port {port!r} is not a number" if port else "no port"
    if not 0 < int(port) < 65536:
        return f"port {int(port)} is not in 1-65535"
    return None
