"""The one ZooKeeper client layer of kops: connection, auth, TLS, retries, bulk reads, multi-ops, watches.

Everything in kops that talks to ZooKeeper (the snapshot reader, the executor, the lab's controller and
brokers) goes through `ZkClient`; kazoo is imported nowhere else. kazoo's exceptions are translated into
`ZkError` subclasses, which are `KopsError`s: an uncaught one still ends as one clear line.
"""

from __future__ import annotations

import logging
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kazoo import exceptions as kx
from kazoo.client import KazooClient, KazooState
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.serialization import SetData
from kazoo.recipe.watchers import ChildrenWatch, DataWatch
from kazoo.retry import KazooRetry
from kazoo.security import OPEN_ACL_UNSAFE, make_acl, make_digest_acl

from kops.errors import ConnectionFailed, KopsError
from kops.zk_layout.connect import ConnectString, parse_connect
from kops.zk_layout.multiread import GET_CHILDREN, GET_DATA, NO_NODE, MultiRead, Node, ReadFailed, Stat

log = logging.getLogger(__name__)

# Paths Kafka protects with CREATOR_ALL only when zookeeper.set.acl=true (ZkData.SensitiveRootPaths).
SENSITIVE_ROOTS = ("/config/users", "/config/brokers", "/delegation_token/tokens")


class ZkError(KopsError):
    """A ZooKeeper operation failed for a reason the caller may handle."""

    def __init__(self, what: str, path: str | None = None, hint: str | None = None) -> None:
        super().__init__(what, where=path, hint=hint)
        self.path = path


class NodeMissing(ZkError):
    pass


class NodeExists(ZkError):
    pass


class VersionConflict(ZkError):
    """A conditional write lost a race: the znode changed since it was read."""


class NotEmpty(ZkError):
    pass


class PermissionDenied(ZkError):
    pass


class TransactionFailed(ZkError):
    def __init__(self, what: str, path: str | None, index: int, cause: ZkError) -> None:
        super().__init__(what, path)
        self.index = index
        self.cause = cause


@dataclass(frozen=True)
class ZkAuth:
    """Authentication: `digest` (user:password, as Kafka's `zookeeper.set.acl` setups use) or `sasl`."""

    scheme: str
    username: str
    password: str = field(repr=False)
    mechanism: str = "DIGEST-MD5"

    def __post_init__(self) -> None:
        if self.scheme not in ("digest", "sasl"):
            raise ValueError(f"unknown ZooKeeper auth scheme {self.scheme!r} (digest or sasl)")


@dataclass(frozen=True)
class ZkTls:
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    key_password: str | None = field(default=None, repr=False)
    verify: bool = True


@dataclass(frozen=True)
class ZkSettings:
    connect: str
    session_timeout: float = 30.0
    connect_timeout: float = 10.0  # documented in docs/cli.md: how long kops waits for an unreachable ensemble
    auth: ZkAuth | None = None
    tls: ZkTls | None = None
    secure_acls: bool = False  # create znodes as Kafka does with zookeeper.set.acl=true
    read_window: int = 8  # multiRead requests in flight at once
    read_batch: int = 500  # paths per multiRead


def _translate(exc: Exception, path: str | None) -> ZkError:
    if isinstance(exc, kx.NoNodeError):
        return NodeMissing("znode does not exist", path)
    if isinstance(exc, kx.NodeExistsError):
        return NodeExists("znode already exists", path)
    if isinstance(exc, kx.BadVersionError):
        return VersionConflict("znode changed since it was read (version mismatch)", path)
    if isinstance(exc, kx.NotEmptyError):
        return NotEmpty("znode has children", path)
    if isinstance(exc, (kx.NoAuthError, kx.AuthFailedError)):
        return PermissionDenied(
            "ZooKeeper denied access", path, hint="check the ZooKeeper credentials (digest/SASL) and ACLs"
        )
    if isinstance(exc, (kx.ConnectionLoss, kx.SessionExpiredError, kx.ConnectionClosedError)):
        return ConnectionLost("lost the ZooKeeper session", path)
    return ZkError(f"ZooKeeper error: {type(exc).__name__} {exc}", path)


class ConnectionLost(ZkError, ConnectionFailed):
    pass


_ERROR_CODES = {NO_NODE: kx.NoNodeError, -102: kx.NoAuthError}


@contextmanager
def _errors(path: str | None = None) -> Iterator[None]:
    try:
        yield
    except kx.KazooException as exc:
        raise _translate(exc, path) from exc
    except KazooTimeoutError as exc:  # kazoo's own wait ran out (a process paused past its session, a lost link)
        raise ConnectionLost("no answer from ZooKeeper within the session timeout", path) from exc


class Txn:
    """A ZooKeeper multi-op: all of it applies or none. Paths are relative to the client's chroot."""

    def __init__(self, client: ZkClient) -> None:
        self._client = client
        self._request = client._kazoo.transaction()
        self._chroot = client._kazoo.chroot or ""
        self._paths: list[str] = []

    def create(self, path: str, data: bytes | None = None, *, ephemeral: bool = False, sequence: bool = False) -> Txn:
        self._request.create(
            path, data or b"", acl=self._client.acl_for(path), ephemeral=ephemeral, sequence=sequence
        )
        self._paths.append(path)
        return self

    def set(self, path: str, data: bytes, version: int = -1) -> Txn:
        # kazoo's set_data re-normalises the path and logs every op; a controller writing 10,000 states in
        # one failover spends a third of its time there, so build the request directly (same wire bytes).
        self._request._check_tx_state()
        self._request.operations.append(SetData(self._chroot + path, data, version))
        self._paths.append(path)
        return self

    def delete(self, path: str, version: int = -1) -> Txn:
        self._request.delete(path, version=version)
        self._paths.append(path)
        return self

    def check(self, path: str, version: int) -> Txn:
        self._request.check(path, version)
        self._paths.append(path)
        return self

    def __len__(self) -> int:
        return len(self._paths)

    def commit(self) -> list[Any]:
        return self.commit_async().result()

    def commit_async(self) -> PendingTxn:
        """Send now, wait later: several multi-ops in flight at once on one session keep their order."""
        with _errors():
            return PendingTxn(self._request.commit_async(), list(self._paths))


class PendingTxn:
    """A multi-op sent but not yet answered; `result()` waits and raises as `Txn.commit` does."""

    def __init__(self, pending: Any, paths: list[str]) -> None:
        self._pending = pending
        self._paths = paths

    def result(self) -> list[Any]:
        with _errors():
            results = self._pending.get()
        for index, result in enumerate(results):
            if isinstance(result, Exception) and not isinstance(result, kx.RolledBackError):
                cause = _translate(result, self._paths[index])
                raise TransactionFailed(
                    f"multi-op failed at step {index + 1} of {len(self._paths)}: {cause.what}",
                    self._paths[index],
                    index,
                    cause,
                )
        return results


class ZkClient:
    """A started ZooKeeper session with the operations kops needs. Use as a context manager."""

    def __init__(self, settings: ZkSettings | str) -> None:
        if isinstance(settings, str):
            settings = ZkSettings(settings)
        self.settings = settings
        self.connect: ConnectString = parse_connect(settings.connect)
        self._multiread_ok: bool | None = None
        kwargs: dict[str, Any] = {}
        auth = settings.auth
        if auth and auth.scheme == "digest":
            kwargs["auth_data"] = [("digest", f"{auth.username}:{auth.password}")]
        elif auth and auth.scheme == "sasl":
            kwargs["sasl_options"] = {
                "mechanism": auth.mechanism,
                "username": auth.username,
                "password": auth.password,
            }
        if settings.tls:
            kwargs.update(
                use_ssl=True,
                ca=settings.tls.ca_file,
                certfile=settings.tls.cert_file,
                keyfile=settings.tls.key_file,
                keyfile_password=settings.tls.key_password,
                verify_certs=settings.tls.verify,
            )
        self._kazoo = KazooClient(
            hosts=str(self.connect),
            timeout=settings.session_timeout,
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_delay=2),
            command_retry=KazooRetry(max_tries=6, delay=0.1, backoff=2, max_delay=3),
            **kwargs,
        )

    # -- lifecycle ---------------------------------------------------------------------------------------

    def start(self) -> ZkClient:
        try:
            with warnings.catch_warnings():  # a missing chroot is reported by the reader, clearly
                warnings.simplefilter("ignore")
                self._kazoo.start(timeout=self.settings.connect_timeout)
        except KazooTimeoutError:
            self._close_quietly()
            raise ConnectionFailed(
                f"cannot reach ZooKeeper within {self.settings.connect_timeout:g}s",
                where=str(self.connect),
                hint="check the connect string, that ZooKeeper runs and that this host may reach it",
            ) from None
        except kx.KazooException as exc:
            self._close_quietly()
            raise _translate(exc, str(self.connect)) from exc
        return self

    def stop(self) -> None:
        self._close_quietly()

    def _close_quietly(self) -> None:
        try:
            self._kazoo.stop()
            self._kazoo.close()
        except Exception:  # noqa: BLE001 - closing must never raise over the real error
            log.debug("error while closing the ZooKeeper client", exc_info=True)

    def __enter__(self) -> ZkClient:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def connected(self) -> bool:
        return self._kazoo.connected

    @property
    def session_id(self) -> int | None:
        sid = self._kazoo.client_id
        return sid[0] if sid else None

    def add_state_listener(self, callback: Callable[[str], None]) -> None:
        """`callback("connected" | "suspended" | "lost")` on session state changes (from kazoo's thread)."""
        names = {KazooState.CONNECTED: "connected", KazooState.SUSPENDED: "suspended", KazooState.LOST: "lost"}
        self._kazoo.add_listener(lambda state: callback(names[state]))

    # -- ACLs --------------------------------------------------------------------------------------------

    def acl_for(self, path: str) -> list[Any]:
        """Kafka's default ACLs: open, or with secure ACLs CREATOR_ALL (+ world READ outside sensitive paths)."""
        if not self.settings.secure_acls:
            return list(OPEN_ACL_UNSAFE)
        auth = self.settings.auth
        if auth is None:
            raise KopsError("secure ACLs need ZooKeeper credentials", hint="configure digest or SASL auth")
        if auth.scheme == "digest":
            owner = make_digest_acl(auth.username, auth.password, all=True)
        else:
            owner = make_acl("sasl", auth.username, all=True)
        sensitive = any(path == root or path.startswith(root + "/") for root in SENSITIVE_ROOTS)
        return [owner] if sensitive else [owner, make_acl("world", "anyone", read=True)]

    @staticmethod
    def digest_acl(username: str, password: str, *, read: bool = False, all: bool = False) -> Any:
        return make_digest_acl(username, password, read=read, all=all)

    # -- single operations ---------------------------------------------------------------------------------

    def exists(self, path: str) -> Stat | None:
        with _errors(path):
            stat = self._kazoo.retry(self._kazoo.exists, path)
        return None if stat is None else Stat(*stat)

    def get(self, path: str) -> Node | None:
        """Data and stat, or None when the znode does not exist."""
        try:
            with _errors(path):
                data, stat = self._kazoo.retry(self._kazoo.get, path)
        except NodeMissing:
            return None
        return Node(data, Stat(*stat))

    def children(self, path: str) -> list[str] | None:
        """Sorted child names, or None when the znode does not exist."""
        try:
            with _errors(path):
                return sorted(self._kazoo.retry(self._kazoo.get_children, path))
        except NodeMissing:
            return None

    def create(
        self,
        path: str,
        data: bytes | None = None,
        *,
        ephemeral: bool = False,
        sequence: bool = False,
        makepath: bool = False,
        acl: list[Any] | None = None,
    ) -> str:
        """Create a znode; `makepath` creates missing parents as persistent znodes with no data (createRecursive)."""
        with _errors(path):
            return self._kazoo.create(
                path,
                data if data is not None else b"",
                acl=acl if acl is not None else self.acl_for(path),
                ephemeral=ephemeral,
                sequence=sequence,
                makepath=makepath,
            )

    def ensure_path(self, path: str) -> None:
        with _errors(path):
            self._kazoo.retry(self._kazoo.ensure_path, path, self.acl_for(path))

    def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        with _errors(path):
            return Stat(*self._kazoo.retry(self._kazoo.set, path, data, version))

    def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        with _errors(path):
            self._kazoo.retry(self._kazoo.delete, path, version, recursive)

    def transaction(self) -> Txn:
        return Txn(self)

    # -- bulk reads --------------------------------------------------------------------------------------

    def get_many(self, paths: Sequence[str]) -> list[Node | None]:
        """Read many znodes with pipelined requests; None for each that does not exist. Order is kept."""
        return self._read_many(list(paths), GET_DATA)

    def children_many(self, paths: Sequence[str]) -> list[list[str] | None]:
        """List the children of many znodes at once; None for each that does not exist."""
        return self._read_many(list(paths), GET_CHILDREN)

    def _read_many(self, paths: list[str], op: int) -> list[Any]:
        if not paths:
            return []
        if self._multiread_ok is None:
            self._multiread_ok = self._probe_multiread()
        if self._multiread_ok:
            return self._read_many_multiread(paths, op)
        return self._read_many_async(paths, op)

    def _absolute(self, path: str) -> str:
        chroot = self._kazoo.chroot or ""
        if not chroot:
            return path
        return chroot if path == "/" else chroot + path

    def _submit_multiread(self, paths: list[str], op: int) -> Any:
        result = self._kazoo.handler.async_result()
        self._kazoo._call(MultiRead([self._absolute(p) for p in paths], op), result)
        return result

    def _probe_multiread(self) -> bool:
        try:
            self._submit_multiread(["/"], GET_DATA).get(timeout=self.settings.connect_timeout)
            return True
        except Exception:  # noqa: BLE001 - any failure means "use the portable path"
            log.info("ZooKeeper server does not support multiRead; using pipelined single reads")
            return False

    def _read_many_multiread(self, paths: list[str], op: int) -> list[Any]:
        size = self.settings.read_batch
        batches = [paths[i : i + size] for i in range(0, len(paths), size)]
        out: list[Any] = []
        pending: deque[tuple[list[str], Any]] = deque()

        def drain_one() -> None:
            batch, result = pending.popleft()
            for attempt in range(6):
                try:
                    with _errors(batch[0]):
                        values = result.get(timeout=self.settings.session_timeout)
                    break
                except ConnectionLost:
                    if attempt == 5:
                        raise
                    self._await_connected()
                    result = self._submit_multiread(batch, op)
            for path, value in zip(batch, values):
                if isinstance(value, ReadFailed):
                    if value.code == NO_NODE:
                        out.append(None)
                        continue
                    raise _translate(_ERROR_CODES.get(value.code, kx.ZookeeperError)(), path)
                out.append(value)

        for batch in batches:
            pending.append((batch, self._submit_multiread(batch, op)))
            if len(pending) >= self.settings.read_window:
                drain_one()
        while pending:
            drain_one()
        return out

    def _await_connected(self) -> None:
        self._kazoo.retry(self._kazoo.exists, "/")

    def _read_many_async(self, paths: list[str], op: int) -> list[Any]:
        window = self.settings.read_window * self.settings.read_batch
        issue = self._kazoo.get_async if op == GET_DATA else self._kazoo.get_children_async
        out: list[Any] = []
        pending: deque[tuple[str, Any]] = deque()

        def drain_one() -> None:
            path, result = pending.popleft()
            try:
                with _errors(path):
                    value = result.get()
            except NodeMissing:
                out.append(None)
                return
            except ConnectionLost:
                value = self._kazoo.retry(self._kazoo.get if op == GET_DATA else self._kazoo.get_children, path)
            if op == GET_DATA:
                data, stat = value
                out.append(Node(data, Stat(*stat)))
            else:
                out.append(sorted(value))

        for path in paths:
            pending.append((path, issue(path)))
            if len(pending) >= window:
                drain_one()
        while pending:
            drain_one()
        return out

    # -- watches -----------------------------------------------------------------------------------------

    def watch_data(self, path: str, callback: Callable[[Node | None], Any]) -> None:
        """Call `callback(node or None)` now and on every change of `path` (re-armed by kazoo).

        Return False from the callback to stop watching.
        """

        def relay(data: bytes | None, stat: Any) -> Any:
            return callback(None if stat is None else Node(data, Stat(*stat)))

        DataWatch(self._kazoo, path, relay)

    def watch_children(self, path: str, callback: Callable[[list[str]], Any]) -> None:
        """Call `callback(sorted children)` now and on every change of the child list of `path`."""
        ChildrenWatch(self._kazoo, path, lambda children: callback(sorted(children)), allow_session_lost=True)
