"""`python -m kops.lab.ingest BOOTSTRAP TOPIC RATE`: the real engines' steady ingest, real records at RATE bytes/s.

Started and stopped by `kops lab produce --rate` (KafkaLab.set_ingest); dies with SIGTERM or SIGKILL.
"""

from __future__ import annotations

import sys

from kops.lab.kafka_client import steady


def main(argv: list[str]) -> int:
    bootstrap, topic, rate = argv
    steady(bootstrap, topic, float(rate))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
