"""Chaos benchmark for the executor: seeded random faults during `kops apply`, then resume or rollback.

One lab of 4 brokers: `--engine kops` (broker processes, real ZooKeeper, time ×4, reached with -z) or
`--engine kafka-4` (real Kafka 4 in KRaft mode, a quorum of 3 controllers combined with brokers 1-3, reached
through the Admin API with -b). Each scenario gets its own two topics (6 and 3 partitions, replication factor 2,
6 MB per partition on the kops engine, 2 MB of real records on Kafka) and a plan raising both to replication
factor 3 in batches of 3 under a 1 MiB/s (kops) or 512 KiB/s (Kafka) throttle. The bench reads the cluster
through kops's own cluster port, the same on both engines. `kops apply` runs as a real process; at a random moment one
fault hits:
  kill-kops        SIGKILL of `kops apply`
  kill-broker      SIGKILL of a broker the batch uses (restarted a moment later)
  kill-controller  SIGKILL of the broker that is controller (KRaft: the quorum leader; restarted a moment later)
  cancel           `kops cancel` (stop at the checkpoint) or `kops cancel --now` (KIP-236 / KIP-455)
  sigint           Ctrl-C once or twice
then, chosen by the same seed, `kops apply --resume` or `kops rollback`. A scenario is ok when its topics end in the
planned layout (resume) or the original one (rollback), replica order included, no partition is offline, and no
throttle is left on its topics or on any broker. Baseline, same run: the same plan applied with no fault.

Each scenario starts from a clean cluster: every broker running, nothing moving (a reassignment left in flight is
waited for), no kops lock, no throttle anywhere; a scenario that cannot be cleaned up is reported, not inherited.
`--busy N` keeps N processes spinning beside the lab all along (an operator's busy machine, a second lab).

`--rolling` runs every apply rolling (`kops apply --rolling`: moves submitted as others finish) instead of in batches;
resume and rollback then follow the record, rolling too.

Usage: python bench/chaos.py [--engine kops|kafka-4] [--scenarios 20] [--seed 1] [--busy 0] [--rolling]
Prints JSON lines: one per scenario, then a summary with `engine`, `scenarios`, `ok`, `failed`, `seconds`,
`baseline_seconds`, `busy`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kops.cluster.admin.adapter import AdminCluster
from kops.cluster.admin.connection import AdminSettings
from kops.cluster.port import Cluster
from kops.cluster.zookeeper import ZkCluster
from kops.errors import KopsError
from kops.executor.journal import Journal
from kops.lab import traffic
from kops.lab.kops_engine import Lab
from kops.lab.zookeeper import ZooKeeperServer
from kops.model.throttle_keys import ALL_KEYS

MB = 1024 * 1024
BROKERS = 4
FAULTS = ("kill-kops", "kill-broker", "kill-controller", "cancel", "sigint")


def kops(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kops.cli.main", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def run(*args: str, timeout: float = 300) -> tuple[int, str]:
    proc = kops(*args)
    try:
        _out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return -1, "timed out"
    return proc.returncode, err


def wait_for(check, timeout: float) -> bool:  # type: ignore[no-untyped-def]  # a helper over callables of any shape
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return True
        except KopsError:
            pass
        time.sleep(0.1)
    return False


@dataclass
class Env:
    """The lab under test and how kops and the bench reach it."""

    engine: str
    lab: Any
    cluster: Cluster  # kops's own port: the bench reads what kops reads
    target: tuple[str, ...]  # ("-z", CONNECT) or ("-b", SERVERS)
    megabytes: int
    throttle: str

    def produce(self, topic: str, partition: int, count: int) -> bool:
        if isinstance(self.cluster, ZkCluster):
            return bool(traffic.produce(self.cluster.client, topic, count, partition))
        from kops.lab.kafka_client import produce  # noqa: PLC0415 - real Kafka only

        return produce(self.target[1], topic, count, partition) > 0

    def controller(self) -> int:
        if isinstance(self.cluster, ZkCluster):
            return self.cluster.snapshot().controller.id or 1
        from kops.lab.kafka_client import cluster_status  # noqa: PLC0415 - KRaft: the quorum leader

        return int(cluster_status(self.target[1], kraft=True).get("controller") or 1)  # type: ignore[call-overload]  # plain JSON values


def layout(env: Env, names: list[str]) -> dict[str, dict[int, tuple[int, ...]]]:
    snap = env.cluster.snapshot()
    return {n: {p: part.replicas for p, part in snap.topics[n].partitions.items()} for n in names if n in snap.topics}


def leftover_throttles(env: Env, names: list[str]) -> list[str]:
    snap = env.cluster.snapshot()
    found = [f"topics/{n}:{k}" for n in names if n in snap.topics for k in snap.topics[n].config if k in ALL_KEYS]
    found += [f"brokers/{b}:{k}" for b, c in snap.broker_configs.items() for k in c if k in ALL_KEYS and c[k]]
    return found


def prepare(env: Env, folder: Path, prefix: str) -> tuple[list[str], dict, dict, Path]:
    names = [f"{prefix}-a", f"{prefix}-b"]
    original = {names[0]: {p: (1 + p % BROKERS, 1 + (p + 1) % BROKERS) for p in range(6)},
                names[1]: {p: (1 + (p + 2) % BROKERS, 1 + (p + 3) % BROKERS) for p in range(3)}}
    for name, assignment in original.items():
        env.cluster.create_topic(name, assignment, {})
    for name, assignment in original.items():
        for p in assignment:
            wait_for(lambda name=name, p=p: env.produce(name, p, env.megabytes * MB), 60)
    playbook = folder / f"{prefix}.yml"
    playbook.write_text("- hosts: all\n  topics:\n" + "".join(f"    - {{name: {n}, replication_factor: "
                                                              f"3}}\n" for n in names)
                        + f"  execution: {{throttle: {env.throttle}, batch: {{max_partitions: 3}}}}\n")
    plan_file = folder / f"{prefix}.plan.json"
    code, err = run("plan", str(playbook), *env.target, "-o", str(plan_file), "--format", "json")
    if code != 0:
        raise SystemExit(f"plan failed: {err}")
    from kops.model import plan_format  # noqa: PLC0415 - only the bench needs the planned targets
    plan = plan_format.loads(plan_file.read_bytes(), str(plan_file))
    planned = {n: dict(a) for n, a in original.items()}
    for m in plan.moves:
        planned[m.topic][m.partition] = m.to_replicas
    return names, original, planned, plan_file


def inject(env: Env, rng: random.Random, fault: str, proc: subprocess.Popen) -> tuple[str, int | None]:
    """One fault; returns its detail and the broker to restart, if any."""
    if fault == "kill-kops":
        os.kill(proc.pid, signal.SIGKILL)
    elif fault == "kill-broker":
        broker = rng.randint(1, BROKERS)
        env.lab.kill_broker(broker)
        return "", broker
    elif fault == "kill-controller":
        broker = env.controller()
        env.lab.kill_broker(broker)
        return "", broker
    elif fault == "cancel":
        now = rng.random() < 0.5
        run("cancel", *env.target, *(["--now"] if now else []))
        return ("now" if now else "checkpoint"), None
    else:
        twice = rng.random() < 0.5
        proc.send_signal(signal.SIGINT)
        if twice:
            time.sleep(0.3)
            proc.send_signal(signal.SIGINT)
        return ("twice" if twice else "once"), None
    return "", None


def scenario(index: int, rng: random.Random, env: Env, folder: Path, mode: tuple[str, ...] = ()) -> dict:
    names, original, planned, plan_file = prepare(env, folder, f"chaos{index}")
    fault = FAULTS[index % len(FAULTS)] if index < len(FAULTS) else rng.choice(FAULTS)
    finish = rng.choice(("resume", "rollback"))
    started = time.monotonic()
    common = (*env.target, "--yes", "--format", "json", "--poll", "0.2", "--session-timeout", "4")
    proc = kops("apply", str(plan_file), *common, *mode)
    time.sleep(rng.uniform(0.2, 2.5))
    detail, restart = inject(env, rng, fault, proc)
    first_err = ""
    try:
        _out, first_err = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        proc.kill()
    first_exit = proc.returncode
    if restart is not None:
        time.sleep(rng.uniform(0.5, 2.0))
        env.lab.start_broker(restart)
        wait_for(lambda: restart in env.cluster.snapshot().live_broker_ids and not env.cluster.snapshot().offline(), 90)
    journal = Journal(env.cluster.records())
    started_any = any(journal.load(i).plan_path == str(plan_file) for i in journal.ids())
    if first_exit == 0:
        code, err = 0, ""
    elif not started_any:  # killed before it recorded anything: nothing to resume or undo, as an operator sees
        code, err = run("apply", str(plan_file), *common, *mode) if finish == "resume" else (0, "")
    elif finish == "resume":
        code, err = run("apply", "--resume", str(plan_file), *common)
    else:
        code, err = run("rollback", str(plan_file), *common)
    if first_exit == 0 and finish == "rollback":
        code, err = run("rollback", str(plan_file), *common)
    expected = original if finish == "rollback" else planned
    healthy = wait_for(lambda: not env.cluster.snapshot().offline(), 30)
    reached = wait_for(lambda: layout(env, names) == expected, 10)  # KRaft metadata reaches every broker shortly
    left = leftover_throttles(env, names)
    ok = code == 0 and reached and healthy and not left
    last = journal.latest()
    return {"scenario": index, "fault": fault, "stop_reasons": stop_reasons(journal, plan_file),
            "first_error": _last_line(first_err), "detail": detail, "first_exit": first_exit, "finish": finish,
            "finish_exit": code, "layout_ok": reached, "online": healthy, "throttles_left": left, "ok": ok,
            "seconds": round(time.monotonic() - started, 2), "error": _last_line(err) if not ok else None,
            "last_execution": None if last is None else f"{last.kind} {last.status}"}


def _last_line(text: str | None) -> str | None:
    lines = (text or "").strip().splitlines()
    return lines[-1] if lines else None


def stop_reasons(journal: Journal, plan_file: Path) -> list[str]:
    reasons = []
    for execution_id in journal.ids():
        record = journal.load(execution_id)
        if record.plan_path == str(plan_file) and record.stop_reason:
            reasons.append(f"{record.kind}: {record.stop_reason}")
    return reasons


def clean_start(env: Env) -> str | None:
    """Every broker up, nothing in flight, no lock, no throttle; None, or what could not be cleaned."""
    state = env.lab.state()
    for broker in sorted(state.racks):
        if not env.lab.running(broker, state):
            env.lab.start_broker(broker)
    if not wait_for(lambda: not env.cluster.snapshot().in_flight(), 180):
        return "a reassignment stayed in flight"
    if not wait_for(lambda: env.cluster.holder() is None, 30):
        return "the kops lock stayed held"
    snap = env.cluster.snapshot()
    for name, topic in snap.topics.items():
        keys = [k for k in topic.config if k in ALL_KEYS]
        if keys:
            env.cluster.alter_config("topics", name, dict.fromkeys(keys))
    for broker, config in snap.broker_configs.items():
        keys = [k for k in config if k in ALL_KEYS]
        if keys:
            env.cluster.alter_config("brokers", str(broker), dict.fromkeys(keys))
    if not wait_for(lambda: not env.cluster.snapshot().under_replicated(), 120):
        return "partitions stayed under-replicated"
    return None


def busy_processes(count: int) -> list[subprocess.Popen]:
    """CPU burners, bounded in time (an hour) and killed at the end of the run."""
    code = "import time\nend = time.monotonic() + 3600\nwhile time.monotonic() < end: pass\n"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(count)]


@contextmanager
def lab_env(engine: str, tmp: Path) -> Iterator[Env]:
    if engine == "kafka-4":
        from kops.lab.kafka_lab import KafkaLab  # noqa: PLC0415 - only the kafka-4 engine needs it

        real = KafkaLab(tmp / "lab", detached=False)
        state = real.up("kafka-4", brokers=BROKERS, controllers=3)
        port = AdminCluster(AdminSettings(state.bootstrap))
        try:
            yield Env(engine, real, port, ("-b", state.bootstrap), 2, "512KiB/s")
        finally:
            port.close()
            real.down()
        return
    server = ZooKeeperServer(tmp / "zk").start()
    lab = Lab(tmp / "lab", detached=False)
    connect = server.connect + "/chaos"
    try:
        lab.up(brokers=BROKERS, zookeeper=connect, session_timeout=6.0, time_scale=4.0)
        with lab.client() as zk:
            yield Env(engine, lab, ZkCluster(zk, connect), ("-z", connect), 6, "1MiB/s")
    finally:
        lab.down()
        server.stop()


def run_all(env: Env, args: argparse.Namespace, tmp: Path) -> None:
    rng = random.Random(args.seed)
    names, _original, planned, plan_file = prepare(env, tmp, "baseline")
    started = time.monotonic()
    mode = ("--rolling",) if args.rolling else ()
    code, err = run("apply", str(plan_file), *env.target, "--yes", "--format", "json", "--poll", "0.2", *mode)
    baseline = round(time.monotonic() - started, 2)
    if code != 0 or not wait_for(lambda: layout(env, names) == planned, 10):
        raise SystemExit(f"baseline apply failed: {err}")
    results = []
    began = time.monotonic()
    for i in range(args.scenarios):
        dirty = clean_start(env)
        result = ({"scenario": i, "ok": False, "why": f"could not start clean: {dirty}"} if dirty is not None
                  else scenario(i, rng, env, tmp, mode))
        print(json.dumps(result), flush=True)
        results.append(result)
    ok = sum(1 for r in results if r["ok"])
    print(json.dumps({"engine": env.engine, "scenarios": len(results), "ok": ok, "failed": len(results) - ok,
                      "seed": args.seed, "seconds": round(time.monotonic() - began, 1), "baseline_seconds": baseline,
                      "nproc": os.cpu_count(), "busy": args.busy, "rolling": args.rolling}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("kops", "kafka-4"), default="kops")
    parser.add_argument("--scenarios", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--busy", type=int, default=0, help="processes kept busy beside the lab")
    parser.add_argument("--rolling", action="store_true", help="apply rolling instead of in batches")
    args = parser.parse_args()
    burners = busy_processes(args.busy)
    logging.basicConfig(level=logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            with lab_env(args.engine, Path(tmp)) as env:
                run_all(env, args, Path(tmp))
        finally:
            for burner in burners:
                burner.kill()
                burner.wait()


if __name__ == "__main__":
    main()
