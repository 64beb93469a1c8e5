"""How a broker learns configs: read `/config/<type>/<name>` at startup, then follow `config_change_`
notifications exactly as Kafka's ZkNodeChangeNotificationListener does (spec §1.14).

The notification is only a trigger: process every child with a sequence number above the last one processed
(all of them after a restart), re-read the entity znode it names, apply it. Each pass also purges
notifications older than 15 minutes. Non-JSON notifications are ignored. A notification is read once: its
creation time is kept for the purge (reading every child on every pass made a pass cost one ZooKeeper read per
notification of the last 15 minutes, hundreds after a few rolling executions, and the broker applied a
throttle seconds late).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable

from kops.errors import ZnodeFormatError
from kops.zk_layout import paths
from kops.zk_layout.client import NodeMissing, ZkClient
from kops.zk_layout.codecs.configs import decode_config
from kops.zk_layout.codecs.notifications import decode_config_change

log = logging.getLogger(__name__)

EXPIRY_MS = 15 * 60 * 1000


def _sequence(name: str) -> int:
    digits = name[len(paths.CONFIG_CHANGE_PREFIX):]
    return int(digits) if digits.isdigit() else -1


class ConfigFollower:
    """Calls `on_topic(name, config)` and `on_broker(config)` (this broker's entity) on every change."""

    def __init__(self, client: ZkClient, broker_id: int, on_topic: Callable[[str, dict[str, str]], None],
                 on_broker: Callable[[dict[str, str]], None]) -> None:
        self.client = client
        self.broker_id = broker_id
        self.on_topic = on_topic
        self.on_broker = on_broker
        self.last_sequence = -1
        self._created_ms: dict[str, float] = {}  # notifications read: name -> creation time, for the purge

    def read_entity(self, entity_type: str, name: str) -> dict[str, str]:
        path = paths.config(entity_type, name)
        node = self.client.get(path)
        if node is None:
            return {}
        try:
            return decode_config(node.data, path)
        except ZnodeFormatError as exc:
            log.warning("ignoring %s", exc.one_line())
            return {}

    def load_all(self) -> None:
        names = self.client.children(paths.config_root("topics")) or []
        for name in names:
            self.on_topic(name, self.read_entity("topics", name))
        self.on_broker(self.read_entity("brokers", str(self.broker_id)))

    def process(self, children: list[str]) -> None:
        """Apply every notification newer than the last processed; purge expired ones."""
        for name in sorted((c for c in children if c.startswith(paths.CONFIG_CHANGE_PREFIX)), key=_sequence):
            sequence = _sequence(name)
            if name in self._created_ms and sequence <= self.last_sequence:
                continue
            path = f"{paths.CONFIG_CHANGES}/{name}"
            node = self.client.get(path)
            if node is None:
                continue
            self._created_ms[name] = node.stat.ctime
            if sequence > self.last_sequence:
                self._apply(path, node.data)
                self.last_sequence = sequence  # after applying: what the broker's status reports as applied
        self._purge(set(children))

    def _purge(self, children: set[str]) -> None:
        now_ms = time.time() * 1000
        for name, created in list(self._created_ms.items()):
            if name not in children:
                del self._created_ms[name]
            elif now_ms - created > EXPIRY_MS:
                with contextlib.suppress(NodeMissing):
                    self.client.delete(f"{paths.CONFIG_CHANGES}/{name}")
                del self._created_ms[name]

    def _apply(self, path: str, data: bytes | None) -> None:
        try:
            change = decode_config_change(data, path)
        except ZnodeFormatError as exc:
            log.warning("ignoring %s", exc.one_line())
            return
        if change.entity_type == "topics":
            self.on_topic(change.entity_name, self.read_entity("topics", change.entity_name))
        elif change.entity_type == "brokers" and change.entity_name == str(self.broker_id):
            self.on_broker(self.read_entity("brokers", change.entity_name))
