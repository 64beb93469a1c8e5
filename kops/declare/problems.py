"""Problems found in declarations: each names FILE:LINE:COL, says what is wrong and, where it can, what to do.

Validation collects every problem instead of stopping at the first, so `kops validate` reports them all at
once (and CI can annotate each line).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kops.model.desired import SourceLocation
from kops.model.problems import Problem, ProblemsError

__all__ = ["DeclarationError", "Problem", "Problems"]


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


class DeclarationError(ProblemsError):
    """Declarations that cannot be used."""

    more_hint = " problem(s); run kops validate"
