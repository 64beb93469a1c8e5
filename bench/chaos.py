"""Chaos benchmark for the executor: seeded random faults during `kops apply`, then resume or rollback.

One lab (4 broker processes, real ZooKeeper, time ×4). Each scenario gets its own two topics (6 and 3 partitions,
replication factor 2, 6 MB per partition) and a plan raising both to replication factor 3 in batches of 3 under a
1 MiB/s throttle. `kops apply` runs as a real process; at a random moment one fault hits:
  kill-kops        SIGKILL of `kops apply`
  kill-broker      SIGKILL of a broker the batch uses (restarted a moment later)
  kill-controller  SIGKILL of the broker that is controller (restarted a moment later)
  cancel           `kops cancel` (stop at the checkpoint) or `kops cancel --now` (KIP-236)
  sigint           Ctrl-C once or twice
then, chosen by the same seed, `kops apply --resume` or `kops rollback`. A scenario is ok when its topics end in the
planned layout (resume) or the original one (rollback), replica order included, no partition is offline, and no
throttle is left on its topics or on any broker. Baseline, same run: the same plan applied with no fault.

Each scenario starts from a clean cluster: every broker running, nothing moving (a reassignment left in flight is
waited for), no kops lock, no throttle anywhere; a scenario that cannot be cleaned up is reported, not inherited.
`--busy N` keeps N processes spinning beside the lab all along (an operator's busy machine, a second lab).

Usage: python bench/chaos.py [--scenarios 20] [--seed 1] [--busy 0]     Prints JSON lines: one per scenario, then
a summary with `scenarios`, `ok`, `failed`, `seconds`, `baseline_seconds`, `busy`.
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
from pathlib import Path

from kops.errors import KopsError
from kops.cluster.zookeeper import ZkRecords
from kops.executor.journal import Journal
from kops.kafka import admin, paths
from kops.kafka.client import ZkClient
from kops.kafka.reader import read_snapshot
from kops.lab import traffic
from kops.lab.cluster import Lab
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


def wait_for(check, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return True
        except KopsError:
            pass
        time.sleep(0.1)
    return False


def layout(zk: ZkClient, names: list[str]) -> dict[str, dict[int, tuple[int, ...]]]:
    snap = read_snapshot(zk)
    return {n: {p: part.replicas for p, part in snap.topics[n].partitions.items()} for n in names if n in snap.topics}


def leftover_throttles(zk: ZkClient, names: list[str]) -> list[str]:
    snap = read_snapshot(zk)
    found = [f"topics/{n}:{k}" for n in names if n in snap.topics for k in snap.topics[n].config if k in ALL_KEYS]
    found += [f"brokers/{b}:{k}" for b, c in snap.broker_configs.items() for k in c if k in ALL_KEYS and c[k]]
    return found


def prepare(zk: ZkClient, connect: str, folder: Path, prefix: str) -> tuple[list[str], dict, dict, Path]:
    names = [f"{prefix}-a", f"{prefix}-b"]
    original = {names[0]: {p: (1 + p % BROKERS, 1 + (p + 1) % BROKERS) for p in range(6)},
                names[1]: {p: (1 + (p + 2) % BROKERS, 1 + (p + 3) % BROKERS) for p in range(3)}}
    for name, assignment in original.items():
        admin.create_topic(zk, name, assignment)
    for name, assignment in original.items():
        for p in assignment:
            wait_for(lambda name=name, p=p: traffic.produce(zk, name, 6 * MB, p), 30)
    playbook = folder / f"{prefix}.yml"
    playbook.write_text("- hosts: all\n  topics:\n" + "".join(f"    - {{name: {n}, replication_factor: 3}}\n" for n in names)
                        + "  execution: {throttle: 1MiB/s, batch: {max_partitions: 3}}\n")
    plan_file = folder / f"{prefix}.plan.json"
    code, err = run("plan", str(playbook), "-z", connect, "-o", str(plan_file), "--format", "json")
    if code != 0:
        raise SystemExit(f"plan failed: {err}")
    from kops.model import plan_format  # noqa: PLC0415 - only the bench needs the planned targets
    plan = plan_format.loads(plan_file.read_bytes(), str(plan_file))
    planned = {n: dict(a) for n, a in original.items()}
    for m in plan.moves:
        planned[m.topic][m.partition] = m.to_replicas
    return names, original, planned, plan_file


def scenario(index: int, rng: random.Random, lab: Lab, zk: ZkClient, connect: str, folder: Path) -> dict:
    names, original, planned, plan_file = prepare(zk, connect, folder, f"chaos{index}")
    fault = FAULTS[index % len(FAULTS)] if index < len(FAULTS) else rng.choice(FAULTS)
    finish = rng.choice(("resume", "rollback"))
    started = time.monotonic()
    common = ("-z", connect, "--yes", "--format", "json", "--poll", "0.2", "--session-timeout", "4")
    proc = kops("apply", str(plan_file), *common)
    time.sleep(rng.uniform(0.2, 2.5))
    detail = ""
    restart: int | None = None
    if fault == "kill-kops":
        os.kill(proc.pid, signal.SIGKILL)
    elif fault == "kill-broker":
        restart = rng.randint(1, BROKERS)
        lab.kill_broker(restart)
    elif fault == "kill-controller":
        restart = read_snapshot(zk).controller.id or 1
        lab.kill_broker(restart)
    elif fault == "cancel":
        now = rng.random() < 0.5
        run("cancel", "-z", connect, *(["--now"] if now else []))
        detail = "now" if now else "checkpoint"
    else:
        twice = rng.random() < 0.5
        proc.send_signal(signal.SIGINT)
        if twice:
            time.sleep(0.3)
            proc.send_signal(signal.SIGINT)
        detail = "twice" if twice else "once"
    first_err = ""
    try:
        _out, first_err = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        proc.kill()
    first_exit = proc.returncode
    if restart is not None:
        time.sleep(rng.uniform(0.5, 2.0))
        lab.start_broker(restart)
        wait_for(lambda: restart in read_snapshot(zk).live_broker_ids and not read_snapshot(zk).offline(), 60)
    started_any = any(Journal(ZkRecords(zk)).load(i).plan_path == str(plan_file) for i in Journal(ZkRecords(zk)).ids())
    if first_exit == 0:
        code, err = 0, ""
    elif not started_any:  # killed before it recorded anything: nothing to resume or undo, as an operator sees
        code, err = run("apply", str(plan_file), *common) if finish == "resume" else (0, "")
    elif finish == "resume":
        code, err = run("apply", "--resume", str(plan_file), *common)
    else:
        code, err = run("rollback", str(plan_file), *common)
    if first_exit == 0 and finish == "rollback":
        code, err = run("rollback", str(plan_file), *common)
    expected = original if finish == "rollback" else planned
    healthy = wait_for(lambda: not read_snapshot(zk).offline(), 30)
    reached = layout(zk, names) == expected
    left = leftover_throttles(zk, names)
    ok = code == 0 and reached and healthy and not left
    last = Journal(ZkRecords(zk)).latest()
    return {"scenario": index, "fault": fault, "stop_reasons": stop_reasons(zk, plan_file), "first_error": _last_line(first_err), "detail": detail, "first_exit": first_exit, "finish": finish,
            "finish_exit": code, "layout_ok": reached, "online": healthy, "throttles_left": left, "ok": ok,
            "seconds": round(time.monotonic() - started, 2), "error": _last_line(err) if not ok else None,
            "last_execution": None if last is None else f"{last.kind} {last.status}"}


def _last_line(text: str | None) -> str | None:
    lines = (text or "").strip().splitlines()
    return lines[-1] if lines else None


def stop_reasons(zk: ZkClient, plan_file: Path) -> list[str]:
    journal = Journal(ZkRecords(zk))
    reasons = []
    for execution_id in journal.ids():
        record = journal.load(execution_id)
        if record.plan_path == str(plan_file) and record.stop_reason:
            reasons.append(f"{record.kind}: {record.stop_reason}")
    return reasons


def clean_start(lab: Lab, zk: ZkClient) -> str | None:
    """Every broker up, nothing in flight, no lock, no throttle; None, or what could not be cleaned."""
    state = lab.state()
    for broker in sorted(state.racks):
        if not lab.running(broker, state):
            lab.start_broker(broker)
    if not wait_for(lambda: not read_snapshot(zk).in_flight(), 180):
        return "a reassignment stayed in flight"
    if not wait_for(lambda: zk.exists(paths.KOPS_LOCK) is None, 30):
        return "the kops lock stayed held"
    snap = read_snapshot(zk)
    for name, topic in snap.topics.items():
        keys = [k for k in topic.config if k in ALL_KEYS]
        if keys:
            admin.alter_config(zk, "topics", name, dict.fromkeys(keys))
    for broker, config in snap.broker_configs.items():
        keys = [k for k in config if k in ALL_KEYS]
        if keys:
            admin.alter_config(zk, "brokers", str(broker), dict.fromkeys(keys))
    if not wait_for(lambda: not read_snapshot(zk).under_replicated(), 120):
        return "partitions stayed under-replicated"
    return None


def busy_processes(count: int) -> list[subprocess.Popen]:
    """CPU burners, bounded in time (an hour) and killed at the end of the run."""
    code = "import time\nend = time.monotonic() + 3600\nwhile time.monotonic() < end: pass\n"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--busy", type=int, default=0, help="processes kept busy beside the lab")
    args = parser.parse_args()
    burners = busy_processes(args.busy)
    logging.basicConfig(level=logging.ERROR)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        server = ZooKeeperServer(Path(tmp) / "zk").start()
        lab = Lab(Path(tmp) / "lab", detached=False)
        connect = server.connect + "/chaos"
        try:
            lab.up(brokers=BROKERS, zookeeper=connect, session_timeout=6.0, time_scale=4.0)
            with lab.client() as zk:
                names, _original, planned, plan_file = prepare(zk, connect, Path(tmp), "baseline")
                started = time.monotonic()
                code, err = run("apply", str(plan_file), "-z", connect, "--yes", "--format", "json", "--poll", "0.2")
                baseline = round(time.monotonic() - started, 2)
                if code != 0 or layout(zk, names) != planned:
                    raise SystemExit(f"baseline apply failed: {err}")
                results = []
                began = time.monotonic()
                for i in range(args.scenarios):
                    dirty = clean_start(lab, zk)
                    if dirty is not None:
                        result = {"scenario": i, "ok": False, "why": f"could not start clean: {dirty}"}
                        print(json.dumps(result), flush=True)
                        results.append(result)
                        continue
                    result = scenario(i, rng, lab, zk, connect, Path(tmp))
                    print(json.dumps(result), flush=True)
                    results.append(result)
                ok = sum(1 for r in results if r["ok"])
                print(json.dumps({"scenarios": len(results), "ok": ok, "failed": len(results) - ok, "seed": args.seed,
                                  "seconds": round(time.monotonic() - began, 1), "baseline_seconds": baseline,
                                  "nproc": os.cpu_count(), "busy": args.busy}), flush=True)
        finally:
            for burner in burners:
                burner.kill()
                burner.wait()
            lab.down()
            server.stop()


if __name__ == "__main__":
    main()
