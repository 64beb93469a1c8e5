"""The controller's connections to the brokers: one send queue and one sender thread per broker.

As in Kafka's ControllerChannelManager, the event thread only enqueues: each broker's requests go out in order
from its own thread, so a broker that stops answering (paused, a hung disk) delays only its own queue, never
the controller's decisions for other partitions. A broker that does not answer is logged and skipped; the
broker-change event that follows its death (its znode vanishing) is what the controller acts on.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any

from kops.errors import ZnodeFormatError
from kops.lab.controller.effects import BrokerRequests
from kops.lab.controller.wire import METHOD, BrokerAddress, encode_batch
from kops.rpc import RpcClient, RpcError, RpcUnavailable
from kops.zk_layout import paths
from kops.zk_layout.client import ZkClient
from kops.zk_layout.codecs.brokers import decode_broker

log = logging.getLogger(__name__)
Reply = dict[str, Any] | None


class _BrokerSender:
    """One broker's queue and the thread that drains it, in order."""

    def __init__(self, broker_id: int, address: BrokerAddress, timeout: float) -> None:
        self.broker_id = broker_id
        self.client = RpcClient(address.host, address.port, timeout)
        self.address = address
        self.queue: queue.Queue[tuple[str, dict[str, Any], Future[Reply]] | None] = queue.Queue()
        self.thread = threading.Thread(target=self._drain, name=f"controller-send-{broker_id}", daemon=True)
        self.thread.start()

    def submit(self, method: str, body: dict[str, Any]) -> Future[Reply]:
        future: Future[Reply] = Future()
        self.queue.put((method, body, future))
        return future

    def _drain(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                break
            method, body, future = item
            try:
                future.set_result(self.client.call(method, body))
            except (RpcUnavailable, RpcError) as exc:
                log.warning("broker %d: %s: %s", self.broker_id, method, exc.what)
                future.set_result(None)
            except Exception as exc:  # noqa: BLE001 - the sender thread must outlive any one request
                log.exception("broker %d: %s failed", self.broker_id, method)
                future.set_exception(exc)
        self.client.close()
        while not self.queue.empty():  # requests left behind by a stop: nobody waits for them forever
            left = self.queue.get_nowait()
            if left is not None:
                left[2].set_result(None)

    def stop(self) -> None:
        self.queue.put(None)


class BrokerChannel:
    def __init__(self, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.brokers: dict[int, BrokerAddress] = {}
        self._senders: dict[int, _BrokerSender] = {}
        self._lock = threading.Lock()

    def set_brokers(self, brokers: dict[int, BrokerAddress]) -> None:
        with self._lock:
            for broker_id, sender in list(self._senders.items()):
                new = brokers.get(broker_id)
                if new is None or (new.host, new.port) != (sender.address.host, sender.address.port):
                    sender.stop()
                    del self._senders[broker_id]
            self.brokers = dict(brokers)

    def _sender(self, broker_id: int) -> _BrokerSender | None:
        with self._lock:
            address = self.brokers.get(broker_id)
            if address is None:
                return None
            sender = self._senders.get(broker_id)
            if sender is None:
                sender = self._senders[broker_id] = _BrokerSender(broker_id, address, self.timeout)
            return sender

    def send(self, controller_id: int, epoch: int, requests: dict[int, BrokerRequests],
             counts: Mapping[str, tuple[int, int]] | None = None) -> dict[int, Future[Reply]]:
        """Queue every broker its batch and return at once; a future per broker for the reply (None where the
        broker refused, did not answer, or is unknown).

        `counts`: the topics' KIP-253 (initial, undeleted) partition counts, carried with LeaderAndIsr.
        """
        futures: dict[int, Future[Reply]] = {}
        for broker_id, reqs in sorted(requests.items()):
            sender = self._sender(broker_id)
            if sender is None:
                futures[broker_id] = _done(None)
                continue
            futures[broker_id] = sender.submit(METHOD, encode_batch(controller_id, epoch, reqs, self.brokers, counts))
        return futures

    def call(self, broker_id: int, method: str, body: dict[str, Any], timeout: float | None = None) -> Reply:
        """One request to one broker, waited for (e.g. log offsets); None if it cannot answer in time."""
        sender = self._sender(broker_id)
        if sender is None:
            return None
        return wait(sender.submit(method, body), self.timeout if timeout is None else timeout)

    def close(self) -> None:
        with self._lock:
            for sender in self._senders.values():
                sender.stop()
            self._senders.clear()


def _done(value: Reply) -> Future[Reply]:
    future: Future[Reply] = Future()
    future.set_result(value)
    return future


def wait(future: Future[Reply], timeout: float) -> Reply:
    try:
        return future.result(timeout)
    except Exception:  # noqa: BLE001 - a timeout or the sender's failure: no answer
        return None


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
