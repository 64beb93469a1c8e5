"""bench/vs_cruise_control.py with Cruise Control's own optimizer at a tiny scale: its side starts the anchor's JVM.

It runs when the anchor is built (../shared/anchors/cruise-control/build.sh; CI does not build it: a Maven
download and javac of its analyzer, minutes) and is skipped with the reason otherwise. What must hold of any
result is what tests/unit/test_vs_cruise_control.py asserts of kops's side: each assignment is valid."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.vs_cruise_control import CC_HOME, VARIANTS, cc_built, compare
from tests.unit.test_vs_cruise_control import assert_valid


@pytest.mark.skipif(not cc_built(), reason=f"Cruise Control's anchor is not built in {CC_HOME} "
                                           "(../shared/anchors/cruise-control/build.sh builds it; CI does not)")
def test_cruise_control_at_a_tiny_scale(tmp_path: Path) -> None:
    assert_valid(list(compare(6, 120, tmp_path, cc_runs=1)), {"before", "lower-bound", "cruise-control", *VARIANTS})
