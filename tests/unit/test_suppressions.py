"""Every `# noqa` and `# type: ignore` says why, beside it (a bare one hides a problem instead of explaining it)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BARE = re.compile(r"# type: ignore(\[[a-z\-, ]*\])?\s*$|# noqa(: [A-Z0-9, ]*)?\s*$")


def test_no_bare_suppression() -> None:
    bare = [f"{path.relative_to(ROOT)}:{number}"
            for folder in ("kops", "spark", "bench", "tests")
            for path in sorted((ROOT / folder).rglob("*.py"))
            for number, line in enumerate(path.read_text().splitlines(), 1) if BARE.search(line)]
    assert bare == []
