"""Test modules have names unique across tests/: pytest imports them by basename (no package in unit/ or
integration/), and a second test_x.py fails collection of the other one, in CI only if both are picked up."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_module_basename_is_unique() -> None:
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    assert not [name for name, count in names.items() if count > 1]
