"""Help as an 80-column terminal shows it, for `kops` and every command: examples kept as written (click's
no-rewrap marker), no example line wider than the terminal, the Admin API first, and every example a command line
the CLI accepts."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
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


def commands(group: Any = None, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command of the tree with its words (`("sizes", "collect")`), the groups included."""
    group = group or typer.main.get_command(app)
    yield path, group
    for name, sub in sorted(getattr(group, "commands", {}).items()):
        yield from commands(sub, (*path, name))


def examples(text: str) -> list[str]:
    """The example command lines of a help text: continuation lines (ending in a backslash) joined, a shell
    pipe and a comment dropped."""
    commands: list[str] = []
    pending = ""
    for line in text.split("Examples:", 1)[1].splitlines():
        if line.strip() and not line.strip().startswith(("kops", "-", "#", "\b")):
            break  # the paragraph after the examples
        line = re.split(r" \| |  #| ; | && ", line)[0]
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


WITH_EXAMPLES = [(words, c.help) for words, c in commands() if c.help and "Examples:" in c.help]


@pytest.mark.parametrize("words,text", WITH_EXAMPLES, ids=[" ".join(w) or "kops" for w, _ in WITH_EXAMPLES])
def test_each_commands_examples_are_kept_as_written(words: tuple[str, ...], text: str) -> None:
    assert "\b\n" in text.split("Examples:", 1)[1], "click rewraps examples without its no-rewrap marker"
    shown = rendered_help(list(words)).split("Examples:", 1)[1].split("\n\n", 2)[1]
    assert max(len(line) for line in shown.splitlines()) <= COLUMNS, shown
    reaching = [c for c in examples(text) if re.search(r"\s-[bz]\s", f"{c} ")]
    assert not reaching or " -b " in f"{reaching[0]} ", f"the first example reaches the cluster with -z: {reaching[0]}"


EXAMPLES = [c for _, text in WITH_EXAMPLES for c in examples(text)]


@pytest.mark.parametrize("command", EXAMPLES)
def test_every_example_is_a_command_line_kops_accepts(command: str) -> None:
    accepted(command)


def test_an_unknown_option_or_command_is_not_accepted() -> None:
    for wrong in ("kops state -b broker1:9092 --no-such-option", "kops no-such-command -b broker1:9092"):
        with pytest.raises(click_errors.UsageError):
            accepted(wrong)


def accepted(command: str) -> None:
    """Parse a command line as kops would (options, arguments, subcommands), without running it."""
    group: Any = typer.main.get_command(app)
    context = group.make_context("kops", shlex.split(command)[1:])
    while hasattr(group, "resolve_command"):
        name, group, rest = group.resolve_command(context, [*context._protected_args, *context.args])
        context = group.make_context(name or "", rest, parent=context)
