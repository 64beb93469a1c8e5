"""Sizes, rates and durations as people write them: "1GiB", "500MB", "50MiB/s", "10 MB/s", "30m", "7d".

Binary suffixes (KiB, MiB, GiB, TiB) are powers of 1024, SI suffixes (KB, MB, GB, TB) powers of 1000, as the
units' standards say; a bare number is bytes.
"""

from __future__ import annotations

import re

_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3, "t": 1000**4, "tb": 1000**4,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
}
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(value: object) -> int:
    """Bytes from an int or a string such as "1GiB"; ValueError with the accepted forms otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a size")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{value} is negative")
        return value
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    match = _SIZE.match(str(value))
    if not match or match.group(2).lower() not in _UNITS:
        raise ValueError(f"{value!r} is not a size (write e.g. 1048576, 500MB or 1GiB)")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def parse_rate(value: object) -> int:
    """Bytes per second from "50MiB/s", "10 MB/s", "1048576" (a bare size is per second)."""
    text = str(value).strip() if not isinstance(value, (int, float)) or isinstance(value, bool) else value
    if isinstance(text, str):
        lowered = text.lower()
        for suffix in ("/s", "ps", "/sec"):
            if lowered.endswith(suffix):
                text = text[: -len(suffix)]
                break
    try:
        return parse_size(text)
    except ValueError:
        raise ValueError(f"{value!r} is not a rate (write e.g. 50MiB/s, 10MB/s or 1048576)") from None


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(value: object) -> float:
    """Seconds from "90s", "30m", "12h", "7d", "2w" or a plain number of seconds."""
    match = _DURATION.match(str(value))
    if not match:
        raise ValueError(f"{value!r} is not a duration (write e.g. 90s, 30m, 12h or 7d)")
    return float(match.group(1)) * _SECONDS[match.group(2)]


def format_rate(per_second: float) -> str:
    """Human-readable binary rate: 50.0 MiB/s."""
    return f"{format_size(per_second)}/s"


def size_unit(count: float) -> tuple[str, int]:
    """The binary unit `format_size` says `count` in, and its bytes: a chart's axis takes its largest bar's."""
    scale = 1
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(count) < 1024 * scale:
            return unit, scale
        scale *= 1024
    return "TiB", scale


def format_size(count: float) -> str:
    """Human-readable binary size: 1.5 GiB."""
    unit, scale = size_unit(count)
    return f"{count:.0f} {unit}" if unit == "B" else f"{count / scale:.1f} {unit}"
