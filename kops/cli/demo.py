"""`kops lab demo`: the newcomer's tour, run by `make demo`.

Each step prints the command a person would type, then runs it through the same code. Today it starts the
lab's ZooKeeper, writes a static sample cluster in Kafka's formats, shows `kops state`, saves a snapshot and
plans a change from it; it grows into apply / rollback on the broker lab as those land.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer

from kops.cli import console, lab
from kops.cli.plan import render_text
from kops.cli.state import render, report_problems, take_snapshot, write_atomically
from kops.cli.targets import one_cluster
from kops.model import plan_format, snapshot_format
from kops.planner.planner import Policy, plan

DEFAULT_DIR = Path(".kops/demo")


def _step(number: int, title: str, command: str) -> None:
    console.out.print()
    console.out.print(f"[bold cyan]{number}. {title}[/]")
    console.out.print(f"[dim]$ {command}[/]")


def demo(
    lab_dir: Annotated[Path, typer.Option("--dir", "-d", help="Folder for the demo's ZooKeeper and files.")] = DEFAULT_DIR,
    keep: Annotated[bool, typer.Option(help="Leave ZooKeeper running afterwards, to explore.")] = False,
) -> None:
    """Run the demo: a real ZooKeeper, a sample cluster written in Kafka's formats, its snapshot, a plan.

    Example: kops lab demo --keep   (then: kops state -z "$(cat .kops/demo/zookeeper)")
    """
    if lab_dir.exists():
        lab.zookeeper_down(lab_dir)
        shutil.rmtree(lab_dir)
    try:
        _step(1, "Start a real ZooKeeper (from PySpark's jars) on loopback", f"kops lab zookeeper up --dir {lab_dir}")
        lab.zookeeper_up(lab_dir, port=None)

        _step(2, "Write a sample cluster in Kafka's exact znode formats", f"kops lab sample --dir {lab_dir}")
        lab.sample(lab_dir, chroot="/kops-sample", replace=False)
        connect = (lab_dir / lab.CONNECT_FILE).read_text().strip()

        _step(3, "Read the whole cluster back", f"kops state -z {connect}")
        snapshot = take_snapshot(connect, 10.0, 30.0)
        render(snapshot)
        report_problems(snapshot)

        out = lab_dir / "snapshot.json"
        _step(4, "Save a snapshot for offline planning (CI runners need no cluster access)",
              f"kops state -z {connect} --out {out}")
        write_atomically(out, snapshot_format.dumps(snapshot))
        console.out.print(f"wrote {out} ({out.stat().st_size:,} bytes, {snapshot.partition_count} partitions)")

        playbook = Path(__file__).resolve().parents[2] / "playbooks" / "lab-demo.yml"
        plan_file = lab_dir / "plan.json"
        _step(5, "Plan a change offline from that snapshot: a new topic, RF 2 -> 3, retire broker 6",
              f"kops plan playbooks/lab-demo.yml --snapshot {out} --allow-in-flight -o {plan_file}")
        declarations, desired = one_cluster(playbook, None, None, [], connect)
        result = plan(desired, snapshot, {}, Policy(allow_in_flight=True, playbook_digest=declarations.digest))
        write_atomically(plan_file, plan_format.dumps(result))
        render_text(result, details=False)
    finally:
        if not keep:
            _step(6, "Stop ZooKeeper", f"kops lab zookeeper down --dir {lab_dir}")
            lab.zookeeper_down(lab_dir)
    if keep:
        console.out.print(f"\nZooKeeper keeps running; explore with: kops state -z {connect}")
        console.out.print(f"stop it with: kops lab zookeeper down --dir {lab_dir}")
