"""ZooKeeper connect strings: `host:port[,host:port...][/chroot]` as Kafka's `zookeeper.connect` (spec §6)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kops.errors import UsageError

_HOST_PORT = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.\-]+)(?::(\d{1,5}))?$")
DEFAULT_PORT = 2181


@dataclass(frozen=True)
class ConnectString:
    hosts: tuple[tuple[str, int], ...]
    chroot: str | None = None

    @property
    def hosts_text(self) -> str:
        return ",".join(f"{h}:{p}" for h, p in self.hosts)

    def __str__(self) -> str:
        return self.hosts_text + (self.chroot or "")


def parse_connect(text: str) -> ConnectString:
    """Parse and validate; the chroot is everything from the first '/' and applies to all hosts."""
    original = text
    text = text.strip()
    slash = text.find("/")
    hosts_part, chroot = (text, None) if slash < 0 else (text[:slash], text[slash:])
    if chroot is not None:
        chroot = chroot.rstrip("/") or None
        if chroot and ("//" in chroot or any(seg in (".", "..") for seg in chroot.split("/")[1:])):
            raise UsageError(f"invalid chroot {chroot!r}", where=original, hint="use a path like /kafka")
    hosts = []
    for item in hosts_part.split(","):
        item = item.strip()
        match = _HOST_PORT.match(item)
        if not match:
            raise UsageError(
                f"invalid ZooKeeper host {item!r}", where=original, hint="expected HOST:PORT[,HOST:PORT][/chroot]"
            )
        port = int(match.group(2)) if match.group(2) else DEFAULT_PORT
        if not 0 < port < 65536:
            raise UsageError(f"invalid port {port}", where=original, hint="ports are 1..65535")
        hosts.append((match.group(1), port))
    return ConnectString(tuple(hosts), chroot)
