"""Problems located in the operator's files (FILE:LINE:COL), and the error that carries them.

Shared by declarations (found while reading playbooks) and planning (found while diffing against a
cluster): both point the operator at the declaration to fix, and the CLI prints the first as one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kops.errors import KopsError
from kops.model.desired import SourceLocation


@dataclass(frozen=True, order=True)
class Problem:
    location: SourceLocation | None
    message: str
    hint: str | None = None
    severity: str = "error"  # error | warning

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else ""
        hint = f" ({self.hint})" if self.hint else ""
        return f"{where}{self.message}{hint}"

    def to_json(self) -> dict[str, Any]:
        loc = self.location
        return {
            "file": loc.file if loc else None,
            "line": loc.line if loc else None,
            "column": loc.column if loc else None,
            "severity": self.severity,
            "message": self.message,
            "hint": self.hint,
        }


class ProblemsError(KopsError):
    """One or more located problems; `one_line` names the first and counts the rest."""

    more_hint = ""

    def __init__(self, problems: list[Problem]) -> None:
        first = problems[0]
        more = f" (and {len(problems) - 1} more{self.more_hint})" if len(problems) > 1 else ""
        super().__init__(first.message + more, where=str(first.location) if first.location else None, hint=first.hint)
        self.problems = problems
