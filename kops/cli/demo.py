"""`kops lab demo`: the newcomer's tour, run by `make demo`.

A lab of six brokers on three racks gets three topics with skewed sizes and a steady ingest; then every step
prints the command a person would type and runs exactly that command line through the CLI: `kops state`,
`kops sizes summarize` (Spark) on log-dir samples, `kops plan` of playbooks/lab-demo.yml (a new topic, a
replication factor raised, broker 6 decommissioned, leaders balanced), `kops apply` with progress,
`kops status`, `kops rollback`, `kops lab down`.

On real Kafka 4 (KRaft, the default once `make setup` fetched it) kops reaches the cluster through the Admin
API (`-b`), the data is real records, and the samples come from `kops sizes collect` (DescribeLogDirs); on
the kops engine (`--engine kops`: real ZooKeeper, the seeds' controller) through ZooKeeper (`-z`), with the
brokers' own kafka-log-dirs snapshots.
"""

from __future__ import annotations

import functools
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from kops.cli import console
from kops.errors import KopsError
from kops.lab import kafka_dist, traffic
from kops.lab.engines import open_lab
from kops.lab.kops_engine import Lab
from kops.zk_layout import tool_writes

DEFAULT_DIR = Path(".kops/demo")
PLAYBOOK = Path(__file__).resolve().parents[2] / "playbooks" / "lab-demo.yml"
MB = 1_000_000
# How an application team left them: leaders piled on brokers 1 and 2, sizes skewed (MB, per partition).
TOPICS: dict[str, dict[int, tuple[tuple[int, ...], int]]] = {
    "orders": {0: ((1, 2, 3), 24), 1: ((2, 3, 4), 18), 2: ((1, 5, 6), 14), 3: ((2, 6, 1), 10), 4: ((1, 3, 5), 8),
               5: ((2, 4, 6), 6)},
    "clicks": {0: ((1, 5), 12), 1: ((2, 6), 9), 2: ((1, 3), 7), 3: ((2, 4), 5), 4: ((1, 6), 4), 5: ((3, 5), 3)},
    "payments": {0: ((4, 5, 6), 4), 1: ((1, 2, 6), 3), 2: ((3, 4, 5), 2)},
}
INGEST = {"orders": "300KB/s", "clicks": "150KB/s"}
LOGDIRS_EVERY = 4.0  # seconds between the brokers' kafka-log-dirs snapshots


class _DemoFailed(KopsError):
    pass


def _step(number: int, title: str) -> None:
    console.out.print()
    console.out.print(f"[bold cyan]{number}. {title}[/]")


_cli: dict[str, Callable[[list[str]], int]] = {}  # the `kops` entry point, given by kops.cli.main (no import cycle)


def attach_cli(run: Callable[[list[str]], int]) -> None:
    _cli["main"] = run


def _run(*argv: str, ok: tuple[int, ...] = (0,)) -> int:
    """Print the command line, then run exactly it through the CLI (its signal handlers undone afterwards)."""
    main = _cli["main"]
    console.out.print(f"[dim]$ kops {' '.join(argv)}[/]", highlight=False)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = main(list(argv))
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    if code not in ok:
        raise _DemoFailed(f"`kops {argv[0]}` exited {code}", hint="see its error above")
    return code


def _create_topics(lab: Lab) -> None:
    """What kafka-topics.sh --create writes, then data at the leaders (followers replicate it)."""
    with lab.client() as client:
        for topic, partitions in TOPICS.items():
            tool_writes.create_topic(client, topic, {p: replicas for p, (replicas, _) in partitions.items()})
        for topic, partitions in TOPICS.items():
            for p, (_, megabytes) in partitions.items():
                _retry(functools.partial(traffic.produce, client, topic, megabytes * MB, p),
                       f"producing to {topic}-{p}")
    table = console.table(None, "Topic", ">Partitions", ">RF", "Sizes (MB, per partition)")
    for topic, partitions in TOPICS.items():
        table.add_row(topic, str(len(partitions)), str(len(next(iter(partitions.values()))[0])),
                      ", ".join(str(n) for _, n in partitions.values()))
    console.out.print(table)


def _retry(action: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if action():
                return
        except KopsError:  # a leader is still being elected
            pass
        if time.monotonic() > deadline:
            raise _DemoFailed(f"timed out {what}")
        time.sleep(0.2)


def _fresh_snapshots(lab_dir: Path, since: float, brokers: int, count: int = 2) -> None:
    """Wait until every broker wrote `count` log-dir snapshots after `since` (earlier ones are dropped: taken
    while the data was being produced, they would read as growth)."""
    folder = lab_dir / "logdirs"
    for old in folder.glob("*.json"):
        if old.stat().st_mtime < since:
            old.unlink(missing_ok=True)

    def enough() -> bool:
        per = [sum(1 for f in folder.glob(f"broker-{b}-*.json") if f.stat().st_mtime >= since)
               for b in range(1, brokers + 1)]
        return min(per) >= count

    _retry(enough, "waiting for log-dir snapshots", timeout=10 * LOGDIRS_EVERY * count)


def _create_real_topics(bootstrap: str) -> None:
    """The same topics on real Kafka, through the Admin API, with real records (an eighth of the sizes: real
    bytes are written, replicated and copied on this machine)."""
    from kops.lab.kafka_client import create_topics, produce  # noqa: PLC0415 - only the real-Kafka demo needs it

    spec = {t: {"assignments": {p: list(r) for p, (r, _) in parts.items()}} for t, parts in TOPICS.items()}
    create_topics(bootstrap, spec)
    for topic, partitions in TOPICS.items():
        for p, (_, megabytes) in partitions.items():
            _retry(functools.partial(produce, bootstrap, topic, megabytes * MB // 4, p),
                   f"producing to {topic}-{p}", timeout=60)


def default_engine() -> str:
    return "kafka-4" if kafka_dist.installed("kafka-4") is not None else "kops"


def demo(
    lab_dir: Annotated[Path,
                       typer.Option("--dir", "-d", help="Folder for the demo's lab (brokers, files).")] = DEFAULT_DIR,
    engine: Annotated[str, typer.Option("--engine", help="kafka-4 (real Kafka in KRaft mode, through the Admin API; "
                                                         "the default once installed) or kops (the seeds' engine on "
                                                         "ZooKeeper).")] = "",
    keep: Annotated[bool, typer.Option(help="Leave the lab running afterwards, to explore.")] = False,
) -> None:
    """Run the newcomer's tour on a lab of 6 brokers: state, sizes with Spark, plan, apply, status, rollback.

    Takes two to four minutes. Example: kops lab demo --keep   (then: kops state -b "$(cat .kops/demo/bootstrap)")
    """
    started = time.monotonic()
    engine = engine or default_engine()
    if engine not in ("kafka-4", "kops"):
        raise KopsError(f"--engine {engine}: the demo runs on kafka-4 or kops")
    d = str(lab_dir)
    if lab_dir.exists():
        if (lab_dir / "lab.json").exists():
            open_lab(lab_dir).down()
        shutil.rmtree(lab_dir)
    target: list[str] = []
    try:
        target = _start(engine, lab_dir)
        _tour(lab_dir, target)
    finally:
        if not keep and (lab_dir / "lab.json").exists():
            _step(9, "Stop the lab")
            _run("lab", "down", "--dir", d)
    console.out.print()
    console.out.print(f"[bold green]demo done in {time.monotonic() - started:.0f} s.[/] "
                      + (f"The lab keeps running: kops state {' '.join(target)}; stop it with kops lab down --dir {d}"
                         if keep else f"Files are in {d}/ (plan, sizes, execution record, broker logs)."))


def _start(engine: str, lab_dir: Path) -> list[str]:
    """Steps 1 and 2: the lab and its topics; returns how the CLI names the cluster (-b or -z)."""
    d = str(lab_dir)
    if engine == "kafka-4":
        _step(1,
              "Start a lab: real Apache Kafka 4 in KRaft mode, 6 brokers on 3 racks (broker 1 is also the controller)")
        _run("lab", "up", "--engine", "kafka-4", "--dir", d, "--brokers", "6", "--racks", "3")
        bootstrap = (lab_dir / "bootstrap").read_text().strip()
        _step(2, "Topics as an application team left them: leaders piled on brokers 1-2, sizes skewed, steady ingest")
        _create_real_topics(bootstrap)
        target = ["-b", bootstrap]
    else:
        _step(1, "Start a lab: real ZooKeeper, 6 broker processes on 3 racks, the seeds' controller")
        _run("lab", "up", "--dir", d, "--brokers", "6", "--racks", "3", "--logdirs-every", f"{LOGDIRS_EVERY:g}")
        _step(2, "Topics as an application team left them: leaders piled on brokers 1-2, sizes skewed, steady ingest")
        _create_topics(Lab(lab_dir))
        target = ["-z", str(Lab(lab_dir).state().connect)]
    for topic, rate in INGEST.items():
        _run("lab", "produce", topic, "--rate", rate, "--dir", d)
    return target


def _tour(lab_dir: Path, target: list[str]) -> None:
    """Steps 3 to 8, the same commands on every engine."""
    d, produced_at = str(lab_dir), time.time()
    plan_file, sizes = f"{d}/plan.json", f"{d}/sizes"
    _step(3, "Read the whole cluster")
    _run("state", *target)
    if target[0] == "-b":
        _step(4,
              f"Sample partition sizes (DescribeLogDirs) into the sample store {d}/store, then summarise it with Spark")
        _run("sizes", "collect", *target, "--store", f"{d}/store", "--every", "2s", "--for", "5s")
        _run("sizes", "summarize", f"{d}/store", "--out", sizes, "--incremental")
    else:
        _step(4, f"Summarise partition sizes with Spark from the brokers' kafka-log-dirs snapshots ({d}/logdirs)")
        _fresh_snapshots(lab_dir, produced_at, brokers=6)
        _run("sizes", "summarize", f"{d}/logdirs", "--out", sizes)
    _run("sizes", "show", sizes, "--top", "8")

    _step(5, "Plan playbooks/lab-demo.yml: add shop.audit, clicks RF 2 -> 3, decommission broker 6, balance leaders")
    _run("plan", "playbooks/lab-demo.yml" if Path("playbooks/lab-demo.yml").exists() else str(PLAYBOOK),
         *target, "--sizes", sizes, "-o", plan_file)
    console.out.print("[dim]Broker 3 takes most of broker 6's replicas: it is the only other broker on rack-3, "
                      "and every partition keeps its replicas on distinct racks.[/]")

    _step(6, "Apply it: batches with throttles, progress, a checkpoint after each batch")
    _run("apply", plan_file, *target, "--yes")

    _step(7, "What ran, and what is in flight now")
    _run("status", *target)

    _step(8, "Roll it back: original replicas in their original order, configs, leaders")
    _run("rollback", plan_file, *target, "--yes")
