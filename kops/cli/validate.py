"""`kops validate`: check playbooks and inventories offline, reporting every problem with FILE:LINE:COL."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from kops.cli import console
from kops.cli.options import ExtraVars, Format, Inventory, Limit, OutputFormat
from kops.declare.loader import Declarations, load_declarations
from kops.declare.problems import Problem
from kops.errors import ExitCode
from kops.model.desired import shown


def render_problem(problem: Problem) -> str:
    colour = "red" if problem.severity == "error" else "yellow"
    where = f"{problem.location}: " if problem.location else ""
    hint = f" [dim]({escape(problem.hint)})[/]" if problem.hint else ""
    return f"{escape(where)}[{colour}]{problem.severity}:[/] {escape(problem.message)}{hint}"


def summary_document(declarations: Declarations) -> dict:
    return {
        "valid": declarations.ok,
        "errors": len(declarations.problems.errors),
        "warnings": len(declarations.problems.warnings),
        "problems": [p.to_json() for p in declarations.problems.sorted()],
        "clusters": {
            name: {"connect": shown(d.connect) if d.connect else None, "topics": len(d.topics), "plays": list(d.plays)}
            for name, d in declarations.desired.items()
        },
        "topics": declarations.topic_count,
        "digest": declarations.digest,
    }


def validate(
    playbook: Annotated[Path, typer.Argument(help="The playbook (YAML list of plays).", show_default=False)],
    inventory: Inventory = None,
    limit: Limit = None,
    extra_vars: ExtraVars = None,
    zookeeper: Annotated[
        str | None, typer.Option("--zookeeper", "-z", help="Without an inventory: the cluster (host 'default').")
    ] = None,
    output_format: Format = OutputFormat.text,
) -> None:
    """Check a playbook and its inventory without touching any cluster: YAML, templates, topic names, Kafka's
    config rules, placements. Every problem is reported at once as FILE:LINE:COL: message (hint).

    Exit 0 when valid (warnings allowed), 1 otherwise.

    Examples:

    \b
      kops validate playbooks/platform.yml -i inventories/example
      kops validate playbooks/platform.yml -i inventories/example -l staging \\
          -e partitions=12
      # for CI annotations
      kops validate playbooks/platform.yml -i inventories/example --format json
    """
    declarations = load_declarations(playbook, inventory, limit, extra_vars or [], zookeeper)
    if output_format is OutputFormat.json:
        console.print_json(summary_document(declarations))
    else:
        for problem in declarations.problems.sorted():
            console.err.print(render_problem(problem), soft_wrap=True, highlight=False)
        clusters = ", ".join(f"{n} ({len(d.topics)} topics)" for n, d in declarations.desired.items()) or "no cluster"
        errors, warnings = len(declarations.problems.errors), len(declarations.problems.warnings)
        if declarations.ok:
            console.out.print(f"[green]valid[/]: {playbook} for "
                              f"{clusters}" + (f", {warnings} warning(s)" if warnings else ""))
        else:
            console.out.print(f"[red]invalid[/]: {errors} error(s), {warnings} warning(s) in {playbook}")
    if not declarations.ok:
        raise typer.Exit(ExitCode.ERROR)
