"""Shared fixtures: one real ZooKeeper server per test session, a fresh chroot per test.

Set KOPS_ZOOKEEPER=host:port to use an existing ensemble instead of starting one.
"""

from __future__ import annotations

import json
import os
import re
import resource
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from kops.lab.zookeeper import ZooKeeperServer
from kops.zk_layout.client import ZkClient, ZkSettings

# pytest caches each test module with its assertions rewritten, unless bytecode writing is off: where
# PYTHONDONTWRITEBYTECODE is set (this machine's shell sets it) every run and every worker rewrote and compiled all
# of them again (collecting tests/unit: 5.8 s, 1.8 s from the cache). The suite's own run writes them (gitignored).
sys.dont_write_bytecode = False

# The tests' Spark (local mode, and the CLI's subprocesses, which inherit it) reads tests/spark-conf: JVM options
# for many small jobs (see that file).
os.environ.setdefault("SPARK_CONF_DIR", str(Path(__file__).with_name("spark-conf")))

# CI replays the same examples every run (a red CI blocks landing); developers' runs keep exploring.
settings.register_profile("ci", derandomize=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


_MODULE_SECONDS: dict[str, float] = {}
_MODULE_CPU: dict[str, float] = {}
_CPU_MARK: list[float] = []  # this worker's CPU seconds at its last report
WEIGHTS = Path(__file__).with_name("module_seconds.json")  # seconds per module, from a CI run (see below)
# A test that starts real processes runs once more if it fails (pytest-rerunfailures): on two cores shared by three
# workers, a JVM starved for seconds can miss a window no code of kops or Kafka is at fault for. The rerun is
# reported (the summary's RERUN lines), a test that fails twice fails the run, and tests/unit never reruns.
LAB_RERUNS = 1


def pytest_configure(config: pytest.Config) -> None:
    """xdist (--dist loadfile) hands out modules in collection order instead of most tests first: the order
    below is longest first, so the last module to start is a short one and neither worker waits long for the
    other (most-tests-first started the long single-test lab modules last and left one worker alone for minutes)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules longest first by their recorded seconds (unknown: integration 60, unit 1), tests within a module
    in file order. `KOPS_RECORD_SECONDS=1 make test` rewrites the record from the run."""
    weights = json.loads(WEIGHTS.read_text())
    def weight(item: pytest.Item) -> float:
        module = item.nodeid.split("::", 1)[0]
        return weights.get(module, 60.0 if module.startswith("tests/integration/") else 1.0)
    items.sort(key=lambda item: -weight(item))
    for item in items:
        if item.get_closest_marker("lab") and not item.get_closest_marker("flaky"):
            item.add_marker(pytest.mark.flaky(reruns=LAB_RERUNS))


def _cpu_seconds() -> float:
    """This process's CPU time and that of the children it has reaped (a lab's brokers once its module stops it)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Each phase's report carries the CPU seconds spent since the last one, on the worker that ran it: two cores
    are CI's limit, so CPU, not seconds of waiting, is what a module costs the run."""
    outcome = yield
    now = _cpu_seconds()
    outcome.get_result().user_properties.append(("cpu_seconds", now - (_CPU_MARK[0] if _CPU_MARK else now)))
    _CPU_MARK[:] = [now]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Seconds and CPU seconds per module (setup, call and teardown, module fixtures included): where CI time goes.
    CPU counts the brokers a module's lab started once they are stopped and reaped (a session's ZooKeeper: never)."""
    module = report.nodeid.split("::", 1)[0]
    _MODULE_SECONDS[module] = _MODULE_SECONDS.get(module, 0.0) + report.duration
    cpu = sum(float(v) for k, v in report.user_properties if k == "cpu_seconds")
    _MODULE_CPU[module] = _MODULE_CPU.get(module, 0.0) + cpu


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _MODULE_SECONDS and os.environ.get("KOPS_RECORD_SECONDS"):
        WEIGHTS.write_text(json.dumps({m: round(s) for m, s in sorted(_MODULE_SECONDS.items(), key=lambda kv: -kv[1])
                                       if s >= 5}, indent=1) + "\n")
    if _MODULE_SECONDS:
        terminalreporter.section("slowest modules (seconds, CPU seconds of the worker and the processes it reaped)")
        for module, seconds in sorted(_MODULE_SECONDS.items(), key=lambda kv: -kv[1])[:15]:
            terminalreporter.write_line(f"{seconds:8.1f}s {_MODULE_CPU.get(module, 0.0):8.1f} CPU s {module}")


@pytest.fixture(scope="session")
def zookeeper_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """host:port of a running ZooKeeper server."""
    existing = os.environ.get("KOPS_ZOOKEEPER")
    if existing:
        yield existing
        return
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper")).start()
    try:
        yield server.connect
    finally:
        server.stop()


@pytest.fixture
def zk_connect(zookeeper_server: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A connect string with a chroot of this test's own, removed afterwards."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", request.node.name)[:80]
    chroot = f"/kops-test/{name}-{uuid.uuid4().hex[:8]}"
    with ZkClient(ZkSettings(zookeeper_server)) as root:
        root.ensure_path(chroot)
    yield f"{zookeeper_server}{chroot}"
    with ZkClient(ZkSettings(zookeeper_server)) as root:
        root.delete(chroot, recursive=True)


@pytest.fixture
def zk(zk_connect: str) -> Iterator[ZkClient]:
    """A started client on this test's chroot."""
    with ZkClient(ZkSettings(zk_connect)) as client:
        yield client


# -- lab engines: the kops engine and real Kafka (tests/engines.py) ----------------------------------------

@pytest.fixture(scope="module")
def kafka39(zookeeper_server: str, tmp_path_factory: pytest.TempPathFactory):
    """One real Kafka 3.9 cluster (ZooKeeper mode, 4 brokers) per test module that asks for it. (One per pytest
    worker, shared by its modules, saved a minute of 21 but let state of one module's tests reach another's:
    cluster-wide dynamic configs, internal topics.)"""
    from tests.engines import kafka39_cluster

    with kafka39_cluster(tmp_path_factory.mktemp("kafka39"), zookeeper_server) as cluster:
        yield cluster


@pytest.fixture(scope="module", params=["kops", "kafka-3.9"])
def engine(request: pytest.FixtureRequest) -> str:
    """Module-scoped so pytest runs a module's tests engine by engine: one real cluster per module."""
    return request.param


@pytest.fixture
def engine_lab(engine: str, tmp_path, zk_connect: str, request: pytest.FixtureRequest):
    """`engine_lab(**kops_options)`: a context manager giving an EngineLab on this test's engine."""
    from tests.engines import engine_cluster

    def open_lab(**options):
        return engine_cluster(engine, tmp_path, zk_connect, lambda: request.getfixturevalue("kafka39"), **options)

    return open_lab


@pytest.fixture(scope="module", params=["kafka-4", "kafka-3.9"])
def admin_engine(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real cluster reached through its brokers only (kafka-4: KRaft; kafka-3.9: the same API on ZooKeeper)."""
    if request.param == "kafka-3.9":
        yield request.getfixturevalue("kafka39")
        return
    from tests.engines import kafka4_cluster

    with kafka4_cluster(tmp_path_factory.mktemp("kafka4")) as cluster:
        yield cluster


@pytest.fixture
def admin_cluster(admin_engine: Any) -> Any:
    """The module's admin engine, emptied. On ZooKeeper through ZooKeeper: a ZooKeeper-mode broker drops a topic
    from its metadata as soon as its deletion starts, so the Admin API calls it gone while a create of the same
    name still fails with TopicAlreadyExists until the controller finishes."""
    from tests.engines import reset_admin_cluster, reset_real_cluster

    assert admin_engine.bootstrap is not None
    if admin_engine.zk_connect:
        reset_real_cluster(admin_engine.lab, admin_engine.zk_connect)
    else:
        reset_admin_cluster(admin_engine.lab, admin_engine.bootstrap)
    return admin_engine
