"""Typed reading of rendered declaration values, with Ansible's leniency: "3" is 3 where a number is expected.

Each reader returns the value or records a problem at the value's location and returns None, so one pass
reports every problem.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from kops.declare.problems import Problems
from kops.model.desired import SourceLocation, shown
from kops.units import parse_duration, parse_rate, parse_size

N = TypeVar("N", int, float)


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    match = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f"did you mean {match[0]!r}?" if match else None


def check_keys(mapping: dict[str, Any], allowed: Iterable[str], what: str, where: Any, problems: Problems) -> None:
    """Unknown keys are errors with a did-you-mean hint. `where(key)` gives a key's location."""
    allowed = list(allowed)
    for key in mapping:
        if key not in allowed:
            hint = did_you_mean(key, allowed) or f"{what} keys are: {', '.join(allowed)}"
            problems.error(where(key), f"unknown key {key!r} in {what}", hint)


def as_int(value: Any, what: str, loc: SourceLocation, problems: Problems, minimum: int | None = None) -> int | None:
    if isinstance(value, bool) or value is None:
        problems.error(loc, f"{what} must be an integer, got {shown(value)!r}")
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit() and text.isascii():
            value = int(text)
    if not isinstance(value, int):
        problems.error(loc, f"{what} must be an integer, got {shown(value)!r}")
        return None
    if minimum is not None and value < minimum:
        problems.error(loc, f"{what} must be at least {minimum}, got {value}")
        return None
    return value


def as_bool(value: Any, what: str, loc: SourceLocation, problems: Problems) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0"):
        return False
    problems.error(loc, f"{what} must be true or false, got {shown(value)!r}")
    return None


def as_str(value: Any, what: str, loc: SourceLocation, problems: Problems) -> str | None:
    if isinstance(value, (dict, list)) or value is None:
        problems.error(loc, f"{what} must be a string, got {type(value).__name__ if value is not None else 'nothing'}")
        return None
    return str(value)


def as_choice(value: Any, choices: Iterable[str], what: str, loc: SourceLocation, problems: Problems) -> str | None:
    choices = list(choices)
    text = as_str(value, what, loc, problems)
    if text is None:
        return None
    if text not in choices:
        problems.error(loc, f"{what} must be one of {', '.join(choices)}, got {text!r}", did_you_mean(text, choices))
        return None
    return text


def as_int_list(value: Any, what: str, loc: SourceLocation, problems: Problems) -> tuple[int, ...] | None:
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        value = [v for v in str(value).replace(",", " ").split()] if isinstance(value, str) else [value]
    if not isinstance(value, list):
        problems.error(loc, f"{what} must be a list of broker ids")
        return None
    result = []
    for item in value:
        number = as_int(item, f"{what} entry", loc, problems, minimum=0)
        if number is None:
            return None
        result.append(number)
    return tuple(result)


def _parsed(parse: Callable[[Any], N], value: Any, what: str, loc: SourceLocation, problems: Problems) -> N | None:
    try:
        return parse(value)
    except ValueError as exc:
        problems.error(loc, f"{what}: {exc}")
        return None


def as_size(value: Any, what: str, loc: SourceLocation, problems: Problems) -> int | None:
    return _parsed(parse_size, value, what, loc, problems)


def as_rate(value: Any, what: str, loc: SourceLocation, problems: Problems) -> int | None:
    return _parsed(parse_rate, value, what, loc, problems)


def as_duration(value: Any, what: str, loc: SourceLocation, problems: Problems) -> float | None:
    """Seconds from 90s, 5m, 1h or a plain number; positive."""
    seconds = _parsed(parse_duration, value, what, loc, problems)
    if seconds is not None and seconds <= 0:
        problems.error(loc, f"{what} must be positive, got {shown(value)!r}")
        return None
    return seconds


def as_fraction(value: Any, what: str, loc: SourceLocation, problems: Problems) -> float | None:
    """0.1, "0.1" or "10%"."""
    text = str(value).strip()
    try:
        number = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        problems.error(loc, f"{what} must be a fraction like 0.1 or 10%, got {shown(value)!r}")
        return None
    if not 0 <= number <= 1:
        problems.error(loc, f"{what} must be between 0 and 1 (or 0% and 100%), got {text}")
        return None
    return number
