"""`kops --help` as an 80-column terminal shows it: examples kept as written (click's no-rewrap marker), no line
wider than the terminal, the Admin API first, and every example a command line the CLI accepts."""

from __future__ import annotations

import re
from typing import Any

import pytest
import typer
from typer._click import exceptions as click_errors
from typer.testing import CliRunner

from kops.cli.main import HELP, app

COLUMNS = 80


def rendered_help(args: list[str]) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": str(COLUMNS)}, prog_name="kops")
    assert result.exit_code == 0, result.output
    return result.output


def examples(text: str) -> list[str]:
    """The example command lines of a help text, continuation lines (ending in a backslash) joined."""
    block = text.split("\b\n", 1)[1].split("\n\n", 1)[0]
    commands: list[str] = []
    pending = ""
    for line in block.splitlines():
        command = re.split(r"\s{2,}", line.strip())[0] if line.strip().startswith(("kops", "-")) else ""
        if not command:
            continue
        pending = f"{pending} {command}".strip()
        if pending.endswith("\\"):
            pending = pending[:-1].strip()
            continue
        commands.append(pending)
        pending = ""
    return commands


def test_the_examples_are_shown_as_written_at_80_columns() -> None:
    shown = rendered_help([])
    assert max(len(line) for line in shown.splitlines()) <= COLUMNS, shown
    block = HELP.split("\b\n", 1)[1].split("\n\n", 1)[0]
    for line in block.splitlines():
        assert f"  {line}" in shown.splitlines(), f"rewrapped: {line!r}"


def test_the_examples_lead_with_the_admin_api() -> None:
    cluster_commands = [c for c in examples(HELP) if re.search(r"\s-[bz]\s", f"{c} ")]
    assert cluster_commands and all(" -b " in f"{c} " for c in cluster_commands[:3])
    assert sum(" -b " in f"{c} " for c in cluster_commands) > sum(" -z " in f"{c} " for c in cluster_commands)


@pytest.mark.parametrize("command", examples(HELP))
def test_every_example_is_a_command_line_kops_accepts(command: str) -> None:
    accepted(command)


def test_an_unknown_option_or_command_is_not_accepted() -> None:
    for wrong in ("kops state -b broker1:9092 --no-such-option", "kops no-such-command -b broker1:9092"):
        with pytest.raises(click_errors.UsageError):
            accepted(wrong)


def accepted(command: str) -> None:
    """Parse a command line as kops would (options, arguments, subcommands), without running it."""
    group: Any = typer.main.get_command(app)
    context = group.make_context("kops", command.split()[1:])
    while hasattr(group, "resolve_command"):
        name, group, rest = group.resolve_command(context, [*context._protected_args, *context.args])
        context = group.make_context(name or "", rest, parent=context)
