"""The ZooKeeper client layer on a real server: auth, ACLs, multi-ops, watches, failures."""

from __future__ import annotations

import time

import pytest

from kops.errors import ConnectionFailed
from kops.lab.ports import free_port
from kops.zk_layout.client import (
    NodeExists,
    PermissionDenied,
    TransactionFailed,
    VersionConflict,
    ZkAuth,
    ZkClient,
    ZkSettings,
)


def test_digest_auth_against_the_real_server(zk_connect: str) -> None:
    alice = ZkSettings(zk_connect, auth=ZkAuth("digest", "alice", "s3cret"))
    with ZkClient(alice) as client:
        client.create("/private", b"only alice", acl=[ZkClient.digest_acl("alice", "s3cret", all=True)])
        assert client.get("/private").data == b"only alice"
    with ZkClient(ZkSettings(zk_connect)) as anonymous:
        with pytest.raises(PermissionDenied) as info:
            anonymous.get("/private")
        assert info.value.path == "/private" and "credentials" in info.value.one_line()
    wrong = ZkSettings(zk_connect, auth=ZkAuth("digest", "alice", "wrong"))
    with ZkClient(wrong) as client, pytest.raises(PermissionDenied):
        client.get("/private")
    with ZkClient(alice) as client:
        client.delete("/private")


def test_secure_acls_as_kafka_sets_them(zk_connect: str) -> None:
    settings = ZkSettings(zk_connect, auth=ZkAuth("digest", "kafka", "pw"), secure_acls=True)
    with ZkClient(settings) as client:
        client.create("/config/brokers/1", b"{}", makepath=True)
        client.create("/brokers/topics/t", b"{}", makepath=True)
    with ZkClient(ZkSettings(zk_connect)) as anonymous:
        assert anonymous.get("/brokers/topics/t").data == b"{}"  # world-readable
        with pytest.raises(PermissionDenied):
            anonymous.get("/config/brokers/1")  # sensitive path: creator only
        with pytest.raises(PermissionDenied):
            anonymous.set("/brokers/topics/t", b"x")
    with ZkClient(settings) as client:
        client.delete("/config", recursive=True)
        client.delete("/brokers", recursive=True)


def test_transactions_are_all_or_nothing(zk: ZkClient) -> None:
    zk.create("/a", b"1")
    txn = zk.transaction().create("/b", b"2").create("/a", b"again").create("/c", b"3")
    with pytest.raises(TransactionFailed) as info:
        txn.commit()
    assert info.value.index == 1 and info.value.path == "/a" and isinstance(info.value.cause, NodeExists)
    assert zk.exists("/b") is None and zk.exists("/c") is None
    stat = zk.exists("/a")
    zk.transaction().check("/a", stat.version).set("/a", b"x").create("/b").commit()
    assert zk.get("/a").data == b"x"


def test_conditional_set_detects_a_concurrent_writer(zk: ZkClient) -> None:
    zk.create("/v", b"1")
    version = zk.get("/v").stat.version
    zk.set("/v", b"2")
    with pytest.raises(VersionConflict):
        zk.set("/v", b"3", version)


def _wait_for(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return condition()


def test_watches_fire_on_changes(zk: ZkClient) -> None:
    seen: list[bytes | None] = []
    children: list[list[str]] = []
    zk.ensure_path("/w")
    zk.watch_data("/w/x", lambda node: seen.append(None if node is None else node.data))
    zk.watch_children("/w", children.append)
    assert _wait_for(lambda: seen == [None] and children == [[]])
    zk.create("/w/x", b"one")
    assert _wait_for(lambda: seen[-1:] == [b"one"] and children[-1:] == [["x"]])
    zk.set("/w/x", b"two")
    assert _wait_for(lambda: seen[-1:] == [b"two"])
    zk.delete("/w/x")
    assert _wait_for(lambda: seen[-1:] == [None] and children[-1:] == [[]])


def test_unreachable_ensemble_fails_fast_with_the_connect_string() -> None:
    dead = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(ConnectionFailed) as info:
        ZkClient(ZkSettings(dead, connect_timeout=1.0)).start()
    assert dead in info.value.one_line() and "within 1s" in info.value.one_line()
    assert time.monotonic() - started < 30  # bounded by the timeout, not by kazoo's retries


def test_session_ids_and_state_listener(zk_connect: str) -> None:
    states: list[str] = []
    client = ZkClient(ZkSettings(zk_connect))
    client.add_state_listener(states.append)
    client.start()
    assert client.connected and client.session_id
    client.stop()
    assert states[0] == "connected" and "lost" in states
