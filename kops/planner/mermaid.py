"""Mermaid blocks for Markdown that GitHub and GitLab draw in a pull request: bar charts and Gantt timelines.

Pure text. Labels are quoted and stripped of what Mermaid's grammar would read as syntax; a test renders every
block with the Mermaid CLI and fails on a syntax error (tests/integration/test_mermaid.py).
"""

from __future__ import annotations

from collections.abc import Sequence

FENCE = "```"


def _label(text: str) -> str:
    return "".join(c for c in text if c not in '"`:;#\n').strip() or "-"


def bar_chart(title: str, x_labels: Sequence[str], y_label: str,
              series: Sequence[tuple[str, Sequence[float]]]) -> list[str]:
    """An `xychart-beta`: the first series as bars, the others as lines over them (Mermaid draws a second bar
    series on top of the first, hiding it, so a before/after pair is a line and bars)."""
    top = max((v for _name, values in series for v in values), default=0.0)
    lines = [f"{FENCE}mermaid", "xychart-beta", f'    title "{_label(title)}"',
             "    x-axis [" + ", ".join(f'"{_label(x)}"' for x in x_labels) + "]",
             f'    y-axis "{_label(y_label)}" 0 --> {_number(top * 1.1 if top else 1)}']
    for index, (_name, values) in enumerate(series):
        lines.append(f"    {'bar' if index == 0 else 'line'} [" + ", ".join(_number(v) for v in values) + "]")
    return lines + [FENCE]


def gantt(title: str, sections: Sequence[tuple[str, Sequence[tuple[str, float, float]]]]) -> list[str]:
    """A timeline: per section, (label, start second, duration seconds) bars on one time axis."""
    lines = [f"{FENCE}mermaid", "gantt", f"    title {_label(title)}", "    dateFormat X", "    axisFormat %H:%M:%S"]
    for number, (section, bars) in enumerate(sections):
        lines.append(f"    section {_label(section)}")
        for index, (label, start, seconds) in enumerate(bars):
            begin = max(0, round(start))
            lines.append(f"    {_label(label)} : s{number}b{index}, {begin}, {begin + max(1, round(seconds))}")
    return lines + [FENCE]


def _number(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))
