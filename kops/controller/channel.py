"""The controller's connections to the brokers: one batched request per broker per event, sent in parallel.

A broker that does not answer is logged and skipped; the broker-change event that follows its death (its
znode vanishing) is what the controller acts on, as in Kafka's ControllerChannelManager.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kops.controller.effects import BrokerRequests
from kops.controller.wire import METHOD, BrokerAddress, encode_batch
from kops.errors import ZnodeFormatError
from kops.kafka import paths
from kops.kafka.client import ZkClient
from kops.kafka.codecs.brokers import decode_broker
from kops.rpc import RpcClient, RpcError, RpcUnavailable

log = logging.getLogger(__name__)


class BrokerChannel:
    def __init__(self, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.brokers: dict[int, BrokerAddress] = {}
        self._clients: dict[int, RpcClient] = {}
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="controller-channel")

    def set_brokers(self, brokers: dict[int, BrokerAddress]) -> None:
        for broker_id, client in list(self._clients.items()):
            known = self.brokers.get(broker_id)
            new = brokers.get(broker_id)
            if new is None or known is None or (new.host, new.port) != (known.host, known.port):
                client.close()
                del self._clients[broker_id]
        self.brokers = dict(brokers)

    def _client(self, broker_id: int) -> RpcClient | None:
        address = self.brokers.get(broker_id)
        if address is None:
            return None
        client = self._clients.get(broker_id)
        if client is None:
            client = self._clients[broker_id] = RpcClient(address.host, address.port, self.timeout)
        return client

    def send(self, controller_id: int, epoch: int, requests: dict[int, BrokerRequests],
             counts: Mapping[str, tuple[int, int]] | None = None) -> dict[int, dict[str, Any] | None]:
        """Send every broker its batch; the replies (None where the broker refused or did not answer).

        `counts`: the topics' KIP-253 (initial, undeleted) partition counts, carried with LeaderAndIsr.
        """

        def one(broker_id: int, reqs: BrokerRequests) -> dict[str, Any] | None:
            client = self._client(broker_id)
            if client is None:
                return None
            try:
                return client.call(METHOD, encode_batch(controller_id, epoch, reqs, self.brokers, counts))
            except (RpcUnavailable, RpcError) as exc:
                log.warning("broker %d: %s", broker_id, exc.what)
                return None

        futures = {b: self._pool.submit(one, b, r) for b, r in sorted(requests.items())}
        return {b: f.result() for b, f in futures.items()}

    def call(self, broker_id: int, method: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """One request to one broker from the event thread (e.g. log offsets); None if it cannot answer."""
        client = self._client(broker_id)
        if client is None:
            return None
        try:
            return client.call(method, body)
        except (RpcUnavailable, RpcError) as exc:
            log.warning("broker %d: %s: %s", broker_id, method, exc.what)
            return None

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)


def call_registered_broker(client: ZkClient, broker_id: int, method: str, body: dict[str, Any] | None = None,
                           timeout: float = 30.0) -> dict[str, Any]:
    """One call to a broker found through its registration znode (controlled shutdown, status, tests, benches).

    Raises RpcUnavailable when the broker is not registered or does not answer, RpcError when it refuses.
    """
    node = client.get(paths.broker(broker_id))
    try:
        broker = None if node is None else decode_broker(broker_id, node.data, paths.broker(broker_id))
    except ZnodeFormatError as exc:
        raise RpcUnavailable(f"broker {broker_id}: {exc.what}", where=exc.where) from None
    if broker is None or broker.host is None:
        raise RpcUnavailable(f"broker {broker_id} is not registered", hint="start it, or wait for it to register")
    rpc = RpcClient(broker.host, broker.port, timeout)
    try:
        return rpc.call(method, body, timeout)
    finally:
        rpc.close()
