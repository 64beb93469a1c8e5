"""`kops lab`: a local cluster on this machine, for the demo, the tests and rehearsals.

Today: the lab's real ZooKeeper server and a static sample cluster written in Kafka's formats. The broker
processes and the controller arrive with the lab issue and plug in here (`kops lab up`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kops.cli import console
from kops.errors import UsageError
from kops.kafka.client import ZkClient, ZkSettings
from kops.kafka.writer import write_snapshot
from kops.lab.sample import sample_snapshot
from kops.lab.zookeeper import ZooKeeperServer

DEFAULT_DIR = Path(".kops/lab")
CONNECT_FILE = "zookeeper"  # <dir>/zookeeper: the cluster's connect string, with its chroot

LabDir = Annotated[Path, typer.Option("--dir", "-d", help="The lab's folder (state, logs, connect string).")]

app = typer.Typer(help="A local cluster on this machine: a real ZooKeeper, a sample cluster.", no_args_is_help=True)
zookeeper_app = typer.Typer(help="The lab's ZooKeeper server (a real one, from PySpark's jars).", no_args_is_help=True)
app.add_typer(zookeeper_app, name="zookeeper")


def server_dir(lab_dir: Path) -> Path:
    return lab_dir / "zk"


@zookeeper_app.command("up")
def zookeeper_up(
    lab_dir: LabDir = DEFAULT_DIR,
    port: Annotated[Optional[int], typer.Option(help="Port to listen on (default: a free one).")] = None,
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
    console.out.print(f"wrote a sample cluster of {count} znodes at [bold]{connect}[/] (also in {lab_dir / CONNECT_FILE})")
