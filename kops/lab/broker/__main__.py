"""`python -m kops.lab.broker`: one lab broker process (started by `kops lab up`, not by hand)."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path

from kops.lab.broker.clock import SimClock
from kops.lab.broker.server import BrokerServer, BrokerSettings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kops.lab.broker", description=__doc__)
    parser.add_argument("--id", type=int, required=True)
    parser.add_argument("--zookeeper", required=True, help="connect string with chroot")
    parser.add_argument("--dir", type=Path, required=True, help="the lab directory")
    parser.add_argument("--rack")
    parser.add_argument("--time-scale", type=float, default=1.0)
    parser.add_argument("--clock-origin", type=float, required=True, help="time.monotonic() at simulated zero")
    parser.add_argument("--wall-origin-ms", type=int, default=0)
    parser.add_argument("--session-timeout", type=float, default=6.0)
    parser.add_argument("--bandwidth", type=float, default=100 * 1024 * 1024)
    parser.add_argument("--logdirs-every", type=float, default=300.0)
    parser.add_argument("--disk-capacity", type=int, default=0, help="bytes of the log dir; 0: unlimited")
    args = parser.parse_args(argv)

    logs = args.dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(logs / f"broker-{args.id}.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s [%(threadName)s] %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    state_changes = logging.FileHandler(logs / f"state-change-{args.id}.log")
    state_changes.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    logging.getLogger("kops.state_change").addHandler(state_changes)

    server = BrokerServer(BrokerSettings(
        broker_id=args.id, connect=args.zookeeper, lab_dir=args.dir, rack=args.rack or None,
        clock=SimClock(args.time_scale, args.clock_origin), wall_origin_ms=args.wall_origin_ms,
        session_timeout=args.session_timeout, bandwidth=args.bandwidth or None, logdirs_every=args.logdirs_every,
        disk_capacity=args.disk_capacity or None))
    signal.signal(signal.SIGTERM, lambda *_: server.stopping.set())
    signal.signal(signal.SIGINT, lambda *_: server.stopping.set())
    server.start()
    server.run_until_stopped()
    return 0


if __name__ == "__main__":
    sys.exit(main())
