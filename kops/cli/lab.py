"""`kops lab`: a local cluster on this machine, for the demo, the tests and rehearsals.

`kops lab up --engine kops` starts a real ZooKeeper and N broker processes (each with the seeds' controller);
`--engine kafka-3.9|kafka-4` runs real Apache Kafka from the jars `kops lab install` fetched. `down` removes
them, `status` shows them, `broker stop|start|kill|pause|resume` injects faults, `produce` adds data. The
ZooKeeper-only commands (`zookeeper`, `sample`) remain for a static sample cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kops.cli import console
from kops.cli.options import Format, OutputFormat, parse_option
from kops.cli.state import controller_label
from kops.errors import UsageError
from kops.lab import class_share, kafka_dist, traffic
from kops.lab.engines import ENGINES, KOPS, availability, open_lab
from kops.lab.kafka_client import cluster_status
from kops.lab.kafka_dist import ENGINES as REAL_ENGINES
from kops.lab.kafka_lab import KafkaLab
from kops.lab.kops_engine import Lab, disk_capacities
from kops.lab.sample import sample_snapshot
from kops.lab.snapshot_writer import write_snapshot
from kops.lab.tls import SASL_SSL_BOOTSTRAP, SASL_SSL_PROPERTIES, SSL_BOOTSTRAP, SSL_PROPERTIES
from kops.lab.zookeeper import ZooKeeperServer
from kops.lab.zookeeper import install as install_zookeeper
from kops.units import format_size, parse_rate, parse_size
from kops.zk_layout.client import ZkClient, ZkSettings
from kops.zk_layout.reader import read_snapshot

DEFAULT_DIR = Path(".kops/lab")
CONNECT_FILE = "zookeeper"  # <dir>/zookeeper: the cluster's connect string, with its chroot

LabDir = Annotated[Path, typer.Option("--dir", "-d", help="The lab's folder (state, logs, connect string).")]

app = typer.Typer(help="A local cluster on this machine: the kops engine (real ZooKeeper, Python brokers, the seeds' "
                       "controller) or real Apache Kafka (3.9 in ZooKeeper mode, 4.x in KRaft mode).",
                  no_args_is_help=True)
zookeeper_app = typer.Typer(help="The lab's ZooKeeper server (a real one, from the jars kops lab install fetched).",
                            no_args_is_help=True)
broker_app = typer.Typer(help="Fault injection on one broker: stop (controlled), kill (SIGKILL), start, pause "
                              "(SIGSTOP), resume.", no_args_is_help=True)
app.add_typer(zookeeper_app, name="zookeeper")
app.add_typer(broker_app, name="broker")


def _engine_help() -> str:
    return "Which cluster to run: " + "; ".join(f"{name}: {what}" for name, what in availability().items()) + "."


@app.command("install")
def install(
    engine: Annotated[str | None, typer.Option(help="One engine: kops (ZooKeeper alone: what the kops engine and "
                                                    "kops rehearse need), kafka-3.9 or kafka-4; default "
                                                    "all.")] = None,
) -> None:
    """Fetch Apache ZooKeeper's and Apache Kafka's jars (broker and tools) with Maven, at the versions pinned in
    kops/lab/zookeeper.pom.xml and kops/lab/kafka_dist/, and train each Kafka's class archive (a one-broker lab
    started and stopped once, so later brokers start on about a third less CPU).

    Into ~/.cache/kops/zookeeper and ~/.cache/kops/kafka (or $KOPS_KAFKA_CACHE); a second run downloads nothing.
    Examples:

    \b
      kops lab install
      kops lab install --engine kops   # ZooKeeper alone: a CI rehearsal
    """
    if engine is not None and engine not in (KOPS, *REAL_ENGINES):
        raise UsageError(f"--engine {engine}: not an engine", hint=f"one of {', '.join((KOPS, *REAL_ENGINES))}")
    with console.err.status("fetching ZooKeeper with Maven"):
        folder, fetched = install_zookeeper()
    console.out.print(f"ZooKeeper {folder.name} {'fetched into' if fetched else 'already in'} {folder}")
    for name in REAL_ENGINES if engine is None else () if engine == KOPS else (engine,):
        with console.err.status(f"fetching {name} with Maven"):
            dist, fetched = kafka_dist.install(name)
        console.out.print(f"{name}: Apache Kafka {dist.version} {'fetched into' if fetched else 'already in'} "
                          f"{dist.lib}")
        with console.err.status(f"training {name}'s class archive (a one-broker lab, started and stopped)"):
            trained = class_share.train(dist)
        if dist.class_archive().exists():
            console.out.print(f"{name}: class archive {'written to' if trained else 'already in'} "
                              f"{dist.class_archive()}")
        else:
            console.err.print(f"warning: {name}'s class archive could not be trained: its brokers start without it, "
                              "slower (see kops/lab/class_share.py)")


@app.command("up")
def up(
    lab_dir: LabDir = DEFAULT_DIR,
    engine: Annotated[str, typer.Option(help=_engine_help())] = KOPS,
    brokers: Annotated[int, typer.Option(help="Number of brokers (ids 1..N).")] = 3,
    racks: Annotated[int, typer.Option(help="Number of racks; brokers are assigned round-robin.")] = 3,
    controllers: Annotated[int, typer.Option(help="kafka-4: KRaft controller quorum size, 1 or 3.")] = 1,
    dedicated_controllers: Annotated[bool, typer.Option(
        "--dedicated-controllers", help="kafka-4: controllers as their own processes (ids 1001..), not combined with "
                                        "brokers 1..Q.")] = False,
    time_scale: Annotated[float, typer.Option(help="kops engine: simulated time runs this many times faster than real "
                                                   "time.")] = 1.0,
    zookeeper: Annotated[str | None, typer.Option("--zookeeper", "-z", help=(
        "Use this ZooKeeper (HOST:PORT[/chroot]) instead of starting one; default chroot /kops-lab."))] = None,
    bandwidth: Annotated[str, typer.Option(help="kops engine: each broker's replication bandwidth, per simulated "
                                                "second.")] = "100MB/s",
    logdirs_every: Annotated[float, typer.Option("--logdirs-every", help="kops engine: simulated seconds between the "
                                                                         "brokers' kafka-log-dirs snapshots "
                                                                         "(DIR/logdirs/).", min=1.0)] = 300.0,
    disk_capacity: Annotated[list[str] | None, typer.Option("--disk-capacity", help=(
        "kops engine: each broker's log dir holds SIZE (e.g. 2GiB), or ID=SIZE for one broker (repeat the option); "
        "a full disk takes the dir offline and stops the broker, as Kafka's (KIP-112). Default: unlimited."))] = None,
    heap: Annotated[str, typer.Option(help="Real engines: each Kafka node's heap.")] = "384MB",
    log_dirs_per_broker: Annotated[int, typer.Option("--log-dirs-per-broker", help=(
        "Real engines: each broker's log.dirs holds N dirs, DIR/nodes/ID/data-1..N (JBOD; KRaft needs "
        "metadata.version 3.7-IV2, which the lab's Kafka 4 has). The kops engine keeps one."))] = 1,
    tls: Annotated[bool, typer.Option("--tls", help=(
        "kafka-4: brokers also listen with SSL (client certificates required) and SASL_SSL (SCRAM-SHA-512); "
        "certificates, bootstrap files and client properties land in the lab folder."))] = False,
) -> None:
    """Start a lab cluster and return once every broker is registered and a controller is elected.

    Writes the bootstrap servers to DIR/bootstrap (real engines) and the ZooKeeper connect string, with its
    chroot, to DIR/zookeeper (kops and kafka-3.9).

    Examples:

    \b
      kops lab up --engine kafka-4 --brokers 3 --controllers 3
      kops lab up --brokers 6 --racks 3 \\
          --disk-capacity 2GiB --disk-capacity 3=1GiB
      kops lab up --engine kafka-4 --tls
      kops lab up --engine kafka-4 --log-dirs-per-broker 2
      kops state -b "$(cat .kops/lab/bootstrap-ssl)" \\
          --command-config .kops/lab/client-ssl.properties
    """
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}", hint=f"one of: {', '.join(ENGINES)}")
    if log_dirs_per_broker < 1:
        raise UsageError(f"--log-dirs-per-broker must be at least 1, not {log_dirs_per_broker}")
    if engine == KOPS:
        if log_dirs_per_broker > 1:
            raise UsageError("--log-dirs-per-broker above 1 is for real Kafka: the kops engine's brokers have one "
                             "log dir (JBOD is Kafka's, not the seeds')", hint="use --engine kafka-4 or kafka-3.9")
        rate = parse_option(parse_rate, bandwidth, "--bandwidth")
        disks = disk_capacities(disk_capacity or [], range(1, brokers + 1))
        with console.err.status(f"starting ZooKeeper and {brokers} brokers"):
            state = Lab(lab_dir).up(brokers, racks, time_scale, zookeeper, bandwidth=float(rate),
                                    logdirs_every=logdirs_every, disk_capacity=disks)
        console.out.print(f"lab up: {brokers} brokers on {min(racks, brokers)} racks at [bold]{state.connect}[/] "
                          f"(time x{time_scale:g}); connect string in {lab_dir / CONNECT_FILE}")
        return
    if disk_capacity:
        raise UsageError("--disk-capacity is for the kops engine", hint="real Kafka uses the disks it is given")
    heap_mb = max(128, parse_option(parse_size, heap, "--heap") // (1024 * 1024))
    with console.err.status(f"starting {engine} with {brokers} brokers"):
        real = KafkaLab(lab_dir).up(engine, brokers, racks, controllers, dedicated_controllers, zookeeper, heap_mb,
                                    tls=tls, log_dirs_per_broker=log_dirs_per_broker)
    where = f"ZooKeeper {real.connect}" if real.connect else f"KRaft quorum of {controllers}" + (
        " dedicated" if dedicated_controllers else " combined")
    console.out.print(f"lab up: Apache Kafka {real.version}, {brokers} brokers on {min(racks, brokers)} racks, "
                      f"{where}{f', {log_dirs_per_broker} log dirs per broker' if log_dirs_per_broker > 1 else ''}; "
                      f"bootstrap [bold]{real.bootstrap}[/] in {lab_dir / 'bootstrap'}")
    if tls:
        console.out.print(f"TLS: SSL (client certificates) in {lab_dir / SSL_BOOTSTRAP} with "
                          f"{lab_dir / SSL_PROPERTIES}; SASL_SSL (SCRAM-SHA-512) in {lab_dir / SASL_SSL_BOOTSTRAP} "
                          f"with {lab_dir / SASL_SSL_PROPERTIES}")


@app.command("down")
def down(lab_dir: LabDir = DEFAULT_DIR) -> None:
    """Stop every process of the lab (SIGKILL) and the ZooKeeper it started. Logs and log-dir snapshots stay.

    Example: kops lab down
    """
    stopped = open_lab(lab_dir).down()
    console.out.print(f"lab down ({len(stopped)} processes stopped)")


@app.command("status")
def status(lab_dir: LabDir = DEFAULT_DIR, output: Format = OutputFormat.text) -> None:
    """Brokers (rack, process, registration), controller, topics, under-replicated and offline partitions.

    Example: kops lab status --format json
    """
    lab = open_lab(lab_dir)
    if isinstance(lab, KafkaLab):
        _real_status(lab, output)
        return
    state = lab.state()
    with lab.client(state) as client:
        snapshot = read_snapshot(client)
    registered = {b.id: b for b in snapshot.brokers}
    live = frozenset(registered)
    partitions = [(name, p, part) for name, topic in snapshot.topics.items() for p, part in topic.partitions.items()]
    under = sorted(f"{n}-{p}" for n, p, part in partitions if part.is_under_replicated())
    offline = sorted(f"{n}-{p}" for n, p, part in partitions if part.is_offline(live))
    brokers: list[dict[str, Any]] = [{"id": b, "rack": state.racks[b], "pid": state.pids.get(b),
                                      "process": lab.running(b, state),
                "registered": b in registered} for b in sorted(state.racks)]
    doc: dict[str, Any] = {"engine": KOPS, "connect": state.connect, "time_scale": state.time_scale, "brokers": brokers,
           "controller": {"id": snapshot.controller.id, "epoch": snapshot.controller.epoch},
           "topics": len(snapshot.topics), "partitions": len(partitions),
           "under_replicated": under, "offline": offline,
           "reassigning": sorted(f"{r.topic}-{r.partition}" for r in snapshot.in_flight())}
    if output == OutputFormat.json:
        console.print_json(doc)
        return
    table = console.table(f"lab at {state.connect} (time x{state.time_scale:g})", ">broker", "rack", ">pid", "process",
                          "registered", "role")
    for b in brokers:
        table.add_row(str(b["id"]), b["rack"], str(b["pid"] or "-"), "running" if b["process"] else "[red]stopped[/]",
                      "yes" if b["registered"] else "[red]no[/]",
                      "controller" if b["id"] == snapshot.controller.id else "")
    console.out.print(table)
    console.out.print(f"controller: {controller_label(snapshot)}; "
                      f"{len(snapshot.topics)} topics, {len(partitions)} partitions; "
                      f"under-replicated {len(under)}, offline {len(offline)}, reassigning {len(doc['reassigning'])}")
    for label, items in (("under-replicated", under), ("offline", offline)):
        if items:
            console.out.print(f"{label}: {', '.join(items[:20])}{' ...' if len(items) > 20 else ''}")


def _real_status(lab: KafkaLab, output: OutputFormat) -> None:
    state = lab.state()
    seen = cluster_status(lab.live_bootstrap(state), kraft=state.connect is None)
    registered = set(seen["registered"])
    nodes: list[dict[str, Any]] = [{"id": n, "roles": list(state.node(n).roles), "rack": state.node(n).rack,
                                    "pid": state.pids.get(n),
              "process": "paused" if lab.paused(n, state) else "running" if lab.running(n, state) else "stopped",
              "registered": n in registered} for n in sorted(state.nodes)]
    doc = {"engine": state.engine, "version": state.version, "bootstrap": state.bootstrap, "zookeeper": state.connect,
           "cluster_id": seen["cluster_id"], "nodes": nodes, **{k: v for k, v in seen.items() if k != "registered"}}
    if output == OutputFormat.json:
        console.print_json(doc)
        return
    table = console.table(f"lab: Apache Kafka {state.version} ({state.engine}) at {state.bootstrap}", ">node", "roles",
                          "rack", ">pid", "process", "registered", "role")
    for n in nodes:
        table.add_row(str(n["id"]), ",".join(n["roles"]), n["rack"] or "-", str(n["pid"] or "-"),
                      n["process"] if n["process"] == "running" else f"[red]{n['process']}[/]",
                      "yes" if n["registered"] else ("-" if "broker" not in n["roles"] else "[red]no[/]"),
                      "controller" if n["id"] == seen["controller"] else "")
    if seen["controller"] is None:
        console.info("the controller is not known right now (a quorum election, or a silent node)")
    console.out.print(table)
    console.out.print(f"cluster {seen['cluster_id']}: {seen['topics']} topics, {seen['partitions']} partitions; "
                      f"under-replicated {len(seen['under_replicated'])}, offline {len(seen['offline'])}, "
                      f"reassigning {'unknown' if seen['reassigning'] is None else len(seen['reassigning'])}")


BrokerId = Annotated[int, typer.Argument(help="The broker's id (1..N; KRaft dedicated controllers 1001..).")]


def _broker_verb(name: str, act: str, said: str, doc: str) -> None:
    """`kops lab broker NAME ID`: one fault injection, the same on every engine."""

    def command(broker: BrokerId, lab_dir: LabDir = DEFAULT_DIR) -> None:
        getattr(open_lab(lab_dir), act)(broker)
        console.out.print(f"broker {broker} {said}")

    command.__doc__ = doc
    broker_app.command(name)(command)


_broker_verb("stop", "stop_broker", "stopped (controlled shutdown)",
             "Controlled shutdown: the controller moves leadership off the broker, then it exits.\n\n"
             "Example: kops lab broker stop 2")
_broker_verb("kill", "kill_broker", "killed",
             "Crash a broker (SIGKILL); ZooKeeper (or the KRaft controller) notices when its session expires.\n\n"
             "Example: kops lab broker kill 1")
_broker_verb("start", "start_broker", "started",
             "Start a stopped or killed broker again; returns once it is registered.\n\n"
             "Example: kops lab broker start 1")
_broker_verb("pause", "pause_broker", "paused",
             "Freeze a broker (SIGSTOP): alive, sockets open, answering nothing, as in a long GC pause.\n\n"
             "Example: kops lab broker pause 2 ; kops lab broker resume 2")
_broker_verb("resume", "resume_broker", "resumed",
             "Let a paused broker run again (SIGCONT).\n\nExample: kops lab broker resume 2")


@app.command("produce")
def produce(
    topic: Annotated[str, typer.Argument(help="Topic to write to.")],
    size: Annotated[str | None, typer.Option("--bytes", help="Append this much now (e.g. 200MB), at the "
                                                             "leaders.")] = None,
    partition: Annotated[int | None, typer.Option(help="Only this partition (default: spread evenly).")] = None,
    rate: Annotated[str | None, typer.Option(help="Steady ingest for the whole topic, e.g. 5MB/s; 0 stops it.")] = None,
    lab_dir: LabDir = DEFAULT_DIR,
) -> None:
    """Add data to a topic: once (--bytes) and/or steadily (--rate), in simulated time.

    Examples:

    \b
      kops lab produce payments --bytes 1GB
      kops lab produce payments --rate 2MB/s
    """
    if size is None and rate is None:
        raise UsageError("say how much: --bytes SIZE and/or --rate RATE", hint="e.g. kops lab produce t --bytes 100MB")
    lab = open_lab(lab_dir)
    if isinstance(lab, KafkaLab):
        _real_produce(lab, topic, size, partition, rate)
        return
    with lab.client() as client:
        if size is not None:
            count = parse_option(parse_size, size, "--bytes")
            ends = traffic.produce(client, topic, count, partition)
            console.out.print(f"appended {format_size(count)} to {len(ends)} partitions of {topic}")
        if rate is not None:
            per_partition = traffic.set_ingest(client, topic, float(parse_option(parse_rate, rate, "--rate")))
            if per_partition:
                console.out.print(f"{topic}: steady ingest {rate} ({format_size(per_partition)}/s per partition)")
            else:
                console.out.print(f"{topic}: steady ingest stopped")


def _real_produce(lab: KafkaLab, topic: str, size: str | None, partition: int | None, rate: str | None) -> None:
    """Real records through a real producer (acks=all): now, and/or steadily from a background process."""
    if size is not None:
        count = parse_option(parse_size, size, "--bytes")
        with console.err.status(f"producing {format_size(count)} to {topic}"):
            records = lab.produce(topic, count, partition)
        console.out.print(f"produced {records} records ({format_size(count)}) to {topic}, acknowledged by all in-sync "
                          f"replicas")
    if rate is not None:
        per_second = float(parse_option(parse_rate, rate, "--rate"))
        lab.set_ingest(topic, per_second)
        console.out.print(f"{topic}: steady ingest {rate}" if per_second else f"{topic}: steady ingest stopped")


def server_dir(lab_dir: Path) -> Path:
    return lab_dir / "zk"


@zookeeper_app.command("up")
def zookeeper_up(
    lab_dir: LabDir = DEFAULT_DIR,
    port: Annotated[int | None, typer.Option(help="Port to listen on (default: a free one).")] = None,
) -> None:
    """Start the lab's ZooKeeper on loopback; it keeps running until `kops lab zookeeper down`.

    Example: kops lab zookeeper up --dir .kops/lab
    """
    existing = ZooKeeperServer.attach(server_dir(lab_dir))
    if existing is not None:
        console.info(f"ZooKeeper already running at {existing.connect} (pid {existing.pid})")
        return
    with console.err.status("starting ZooKeeper"):
        server = ZooKeeperServer(server_dir(lab_dir), port=port, detached=True).start()
    console.out.print(f"ZooKeeper running at [bold]{server.connect}[/] (pid {server.pid}, data in {server.directory})")


@zookeeper_app.command("down")
def zookeeper_down(lab_dir: LabDir = DEFAULT_DIR) -> None:
    """Stop the lab's ZooKeeper (SIGTERM, then SIGKILL after 10 s). Its data folder is kept.

    Example: kops lab zookeeper down --dir .kops/lab
    """
    server = ZooKeeperServer.attach(server_dir(lab_dir))
    if server is None:
        console.info("ZooKeeper is not running")
        return
    server.stop()
    console.out.print(f"ZooKeeper at {server.connect} stopped")


@zookeeper_app.command("status")
def zookeeper_status(lab_dir: LabDir = DEFAULT_DIR) -> None:
    """Say whether the lab's ZooKeeper runs, and where.

    Example: kops lab zookeeper status
    """
    server = ZooKeeperServer.attach(server_dir(lab_dir))
    if server is None:
        console.out.print("ZooKeeper: not running")
        raise typer.Exit(1)
    console.out.print(f"ZooKeeper: running at {server.connect} (pid {server.pid})")


@app.command("sample")
def sample(
    lab_dir: LabDir = DEFAULT_DIR,
    chroot: Annotated[str, typer.Option(help="ZooKeeper path to write the cluster under.")] = "/kops-sample",
    replace: Annotated[bool, typer.Option(help="Delete an existing cluster at that path first.")] = False,
) -> None:
    """Write a static sample cluster (6 brokers, 3 racks, a reassignment in flight, throttles, a pending
    deletion, an offline partition) into the lab's ZooKeeper, in Kafka's exact formats, and record its
    connect string in DIR/zookeeper.

    Example: kops lab sample --dir .kops/lab && kops state -z "$(cat .kops/lab/zookeeper)"
    """
    if not chroot.startswith("/") or chroot == "/":
        raise UsageError(f"--chroot must be an absolute path below /, not {chroot!r}")
    server = ZooKeeperServer.attach(server_dir(lab_dir))
    if server is None:
        raise UsageError("the lab's ZooKeeper is not running", where=str(lab_dir), hint="run: kops lab zookeeper up")
    with ZkClient(ZkSettings(server.connect)) as root:
        if root.exists(chroot):
            if not replace:
                raise UsageError(f"{chroot} already holds a cluster", hint="pass --replace to write it anew")
            root.delete(chroot, recursive=True)
        root.ensure_path(chroot)
    connect = f"{server.connect}{chroot}"
    with ZkClient(ZkSettings(connect)) as client:
        count = write_snapshot(client, sample_snapshot())
    (lab_dir / CONNECT_FILE).write_text(connect + "\n")
    console.out.print(f"wrote a sample cluster of {count} znodes at [bold]{connect}[/] (also in "
                      f"{lab_dir / CONNECT_FILE})")
