"""How many examples a property test draws: its full count in CI, a third of it (at least 100) elsewhere.

CI runs the `ci` hypothesis profile (tests/conftest.py: `CI` set), derandomized: every run replays the same
examples, so what CI checks is fixed, large and replayable, and a red CI is never a fluke. A developer's run draws
new examples each time, so across runs it explores beyond CI's fixed set; a third of the count per run keeps
`pytest tests/unit` within a minute. `pytest --hypothesis-profile ci` runs CI's examples locally.
"""

from __future__ import annotations

from hypothesis import settings


def examples(ci: int) -> int:
    """`ci` under the `ci` profile, else a third of it and at least 100 (read when a test module is imported,
    after the profile is loaded)."""
    return ci if settings.get_current_profile_name() == "ci" else max(100, ci // 3)
