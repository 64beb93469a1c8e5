"""Where output goes: rich text on a terminal, plain text when piped, JSON for machines; errors on stderr."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kops.errors import KopsError


def _console(stderr: bool) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr, highlight=False, emoji=False)
    # Piped: no colour, no wrapping at 80 columns.
    return Console(stderr=stderr, highlight=False, emoji=False, no_color=True,
                   width=int(os.environ.get("COLUMNS", "160")))


out = _console(stderr=False)
err = _console(stderr=True)


def reset() -> None:
    """Re-detect the streams (tests swap sys.stdout/sys.stderr between invocations)."""
    global out, err
    out = _console(stderr=False)
    err = _console(stderr=True)


def table(title: str | None = None, *columns: str, **kwargs: Any) -> Table:
    t = Table(title=title, box=box.SIMPLE_HEAD if out.is_terminal else box.SIMPLE, title_justify="left", **kwargs)
    for column in columns:
        t.add_column(column.lstrip(">"), justify="right" if column.startswith(">") else "left")
    return t


def print_json(document: Any, one_line: bool = False) -> None:
    """Machine output: plain JSON on stdout, never styled (`one_line` for a stream of JSON lines)."""
    sys.stdout.write(json.dumps(document, indent=None if one_line else 2, sort_keys=True, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def error(exc: KopsError | str) -> None:
    line = exc.one_line() if isinstance(exc, KopsError) else exc
    err.print(f"[bold red]error:[/] {escape(line)}", markup=True, highlight=False, soft_wrap=True)


def warning(message: str) -> None:
    err.print(f"[yellow]warning:[/] {escape(message)}", markup=True, highlight=False, soft_wrap=True)


def info(message: str) -> None:
    err.print(escape(message), highlight=False, soft_wrap=True)
