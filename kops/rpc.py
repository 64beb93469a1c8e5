"""The lab's loopback RPC: length-prefixed JSON messages over TCP, one request and one reply at a time.

Brokers serve it for controller requests (LeaderAndIsr, StopReplica, UpdateMetadata, batched per broker),
followers' fetches, the controller's controlled-shutdown request and the lab's admin calls. It is small on
purpose: a frame is a 4-byte big-endian length and a UTF-8 JSON object; a request is
`{"method": name, "body": {...}}`, a reply `{"ok": true, "body": {...}}` or `{"ok": false, "error": text}`.
"""

from __future__ import annotations

import json
import logging
import socket
import socketserver
import struct
import threading
from collections.abc import Callable
from typing import Any

from kops.errors import KopsError

log = logging.getLogger(__name__)

_HEADER = struct.Struct(">I")
MAX_FRAME = 256 * 1024 * 1024

Handler = Callable[[dict[str, Any]], dict[str, Any]]


class RpcError(KopsError):
    """The peer answered with an error (it refused the request)."""


class RpcUnavailable(KopsError):
    """The peer could not be reached or hung up."""


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    payload = json.dumps(message, separators=(",", ":")).encode()
    sock.sendall(_HEADER.pack(len(payload)) + payload)


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, remaining = [], size
    while remaining:
        chunk = sock.recv(min(remaining, 1 << 20))
        if not chunk:
            raise ConnectionError("peer closed the connection")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _receive(sock: socket.socket) -> dict[str, Any]:
    (size,) = _HEADER.unpack(_read_exactly(sock, _HEADER.size))
    if size > MAX_FRAME:
        raise ConnectionError(f"frame of {size} bytes is larger than {MAX_FRAME}")
    message = json.loads(_read_exactly(sock, size))
    if not isinstance(message, dict):
        raise ConnectionError("frame is not a JSON object")
    return message


class RpcServer:
    """Serves `handlers` on 127.0.0.1, one thread per connection; a handler's exception becomes an error reply."""

    def __init__(self, handlers: dict[str, Handler], port: int = 0) -> None:
        self.handlers = handlers
        outer = self

        class _Connection(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                while True:
                    try:
                        message = _receive(self.request)
                    except (ConnectionError, OSError, ValueError):
                        return
                    try:
                        _send(self.request, outer.dispatch(message))
                    except OSError:
                        return

        class _Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._server = _Server(("127.0.0.1", port), _Connection)
        self._thread = threading.Thread(target=self._server.serve_forever, name="rpc-server", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def dispatch(self, message: dict[str, Any]) -> dict[str, Any]:
        method = message.get("method")
        handler = self.handlers.get(method) if isinstance(method, str) else None
        if handler is None:
            return {"ok": False, "error": f"unknown method {method!r}"}
        try:
            return {"ok": True, "body": handler(message.get("body") or {})}
        except RpcError as exc:
            return {"ok": False, "error": exc.what}
        except Exception as exc:  # noqa: BLE001 - a bad request must not take the server down
            log.exception("rpc %s failed", method)
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}

    def start(self) -> RpcServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class RpcClient:
    """A connection to one peer, reopened on demand; safe to share between threads (calls are serialised)."""

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.address = (host, port)
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()

    def call(self, method: str, body: dict[str, Any] | None = None, timeout: float | None = None) -> dict[str, Any]:
        with self._lock:
            for attempt in (1, 2):  # a pooled connection may have been closed by a restarted peer
                fresh = self._sock is None
                try:
                    sock = self._connect(timeout)
                    _send(sock, {"method": method, "body": body or {}})
                    reply = _receive(sock)
                    break
                except (OSError, ConnectionError, ValueError) as exc:
                    self._close()
                    if fresh or attempt == 2:
                        raise RpcUnavailable(
                            f"{method}: no answer from {self.address[0]}:{self.address[1]} ({exc})"
                        ) from None
        if not reply.get("ok"):
            raise RpcError(f"{method} refused: {reply.get('error')}")
        body = reply.get("body")
        return body if isinstance(body, dict) else {}

    def _connect(self, timeout: float | None) -> socket.socket:
        if self._sock is None:
            sock = socket.create_connection(self.address, timeout=self.timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sock = sock
        self._sock.settimeout(timeout or self.timeout)
        return self._sock

    def _close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    def close(self) -> None:
        with self._lock:
            self._close()
