"""Problems found in declarations: each names FILE:LINE:COL, says what is wrong and, where it can, what to do.

Validation collects every problem instead of stopping at the first, so `kops validate` reports them all at
once (and CI can annotate each line).
"""

from __future__ import annotations

from dataclasses import dataclass, field

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

    def to_json(self) -> dict:
        loc = self.location
        return {
            "file": loc.file if loc else None,
            "line": loc.line if loc else None,
            "column": loc.column if loc else None,
            "severity": self.severity,
            "message": self.message,
            "hint": self.hint,
        }


@dataclass
class Problems:
    items: list[Problem] = field(default_factory=list)

    def error(self, location: SourceLocation | None, message: str, hint: str | None = None) -> None:
        self.items.append(Problem(location, message, hint))

    def warning(self, location: SourceLocation | None, message: str, hint: str | None = None) -> None:
        self.items.append(Problem(location, message, hint, "warning"))

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.items if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.items if p.severity == "warning"]

    def sorted_errors(self) -> list[Problem]:
        return [p for p in self.sorted() if p.severity == "error"]

    def sorted(self) -> list[Problem]:
        """Stable report order: by file, line, column, then message; duplicates dropped."""
        unique = {(p.location, p.message, p.hint, p.severity): p for p in self.items}
        return sorted(unique.values(), key=lambda p: (p.location or SourceLocation("", 0, 0), p.message))


class DeclarationError(KopsError):
    """Declarations that cannot be used. Carries every problem; `one_line` names the first."""

    def __init__(self, problems: list[Problem]) -> None:
        first = problems[0]
        more = f" (and {len(problems) - 1} more problem(s); run kops validate)" if len(problems) > 1 else ""
        super().__init__(first.message + more, where=str(first.location) if first.location else None, hint=first.hint)
        self.problems = problems
