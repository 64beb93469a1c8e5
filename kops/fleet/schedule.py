"""How a fleet is run: `serial` clusters at a time, and when too many failures stop it (Ansible's `serial` and
`max_fail_percentage`, over the whole fleet; docs/design/fleet.md)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TypeVar

from kops.errors import UsageError

T = TypeVar("T")


def parse_serial(value: str | int | None, fleet: int) -> int:
    """`N` or `N%` of the fleet (rounded down, at least 1), as Ansible writes `serial`; None: the whole fleet."""
    if value is None:
        return max(fleet, 1)
    text = str(value).strip()
    match = re.fullmatch(r"(\d+)(%?)", text)
    if match is None or int(match.group(1)) == 0:
        raise UsageError(f"serial: {value!r} is not a positive count or percentage", hint="e.g. 1, 3 or 25%")
    count = int(match.group(1))
    if match.group(2):
        if count > 100:
            raise UsageError(f"serial: {value!r} is more than 100%")
        return max(fleet * count // 100, 1)
    return min(count, max(fleet, 1))


def batches(items: Sequence[T], size: int) -> list[list[T]]:
    """`items` in order, `size` at a time."""
    return [list(items[i:i + size]) for i in range(0, len(items), max(size, 1))]


def budget_exceeded(failed: int, fleet: int, max_fail_percentage: float) -> bool:
    """More than `max_fail_percentage` of the fleet failed: start no further cluster (0: the first failure)."""
    return fleet > 0 and failed * 100 > max_fail_percentage * fleet


def check_percentage(value: float) -> float:
    if not 0 <= value <= 100:
        raise UsageError(f"--max-fail-percentage: {value:g} is not between 0 and 100")
    return value
