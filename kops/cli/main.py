"""The `kops` entry point: the command tree, global options, and the one place errors become exit codes."""

from __future__ import annotations

import logging
import sys
from typing import Annotated

import typer
from typer._click import exceptions as click_errors  # typer (pinned >= 0.29) vendors click

from kops import __version__
from kops.cli import apply, console, demo, lab, plan, rebalance, rehearse, sizes, state, status, validate
from kops.errors import ExitCode, KopsError

HELP = """kops: declarative partition-layout operations for Apache Kafka.

Declare topic layouts in YAML; kops reads the cluster, plans reassignments with throttles and a
rollback, and applies them in batches with a checkpoint at each boundary.

Reach a cluster with -b SERVERS (the Admin API: any Kafka 2.4+, KRaft included), -z CONNECT
(ZooKeeper mode, Kafka 2.4 - 3.9) or -i INVENTORY -l CLUSTER (a cluster of an inventory).

Examples:

\b
  kops state -b broker1:9092                  show a cluster
  kops state -b broker1:9092 --out snap.json  save a snapshot
  kops plan playbooks/platform.yml \\
      -i inventories/example -l staging -o plan.json
                                              plan a change
  kops apply plan.json -b broker1:9092        carry it out
  kops rollback plan.json -b broker1:9092     undo it
  kops rebalance -b broker1:9092 --max-moves 50 \\
      --apply --yes                           a bounded rebalance, for cron
  kops lab demo                               the tour on a local lab cluster

Exit codes: 0 done, 1 error, 2 changes pending, 3 stopped at a checkpoint (or refused: the
cluster is not ready), 4 stale plan, 5 locked. See docs/cli.md.
"""

app = typer.Typer(
    help=HELP,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
)
app.command("state")(state.state)
app.command("validate")(validate.validate)
app.command("plan")(plan.plan)
app.command("apply")(apply.apply)
app.command("status")(status.status)
app.command("cancel")(status.cancel)
app.command("rollback")(apply.rollback)
app.command("rebalance")(rebalance.rebalance)
app.command("rehearse")(rehearse.rehearse)
lab.app.command("demo")(demo.demo)
app.add_typer(lab.app, name="lab")
app.add_typer(sizes.app, name="sizes")

_debug = {"on": False}


def _version(value: bool) -> None:
    if value:
        console.out.print(f"kops {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logs.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    _debug["on"] = debug
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not debug:
        logging.getLogger("kazoo").setLevel(logging.CRITICAL)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns (and exits with) a documented exit code."""
    console.reset()
    _debug["on"] = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        code = app(args=argv, prog_name="kops", standalone_mode=False)
        code = int(code) if isinstance(code, int) else ExitCode.OK
    except KopsError as exc:
        if _debug["on"]:
            raise
        console.error(exc)
        code = exc.exit_code
    except click_errors.NoArgsIsHelpError as exc:
        console.out.print(exc.ctx.get_help() if exc.ctx else HELP, markup=False)
        code = ExitCode.OK
    except click_errors.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx else "kops"
        console.error(f"{exc.format_message()} (see '{where} --help')")
        code = ExitCode.ERROR
    except click_errors.ClickException as exc:
        console.error(exc.format_message())
        code = ExitCode.ERROR
    except typer.Abort:  # what the vendored click raises too
        console.error("aborted")
        code = ExitCode.ERROR
    except KeyboardInterrupt:
        console.error("interrupted")
        code = ExitCode.ERROR
    if argv is None:
        sys.exit(code)
    return code


demo.attach_cli(main)

if __name__ == "__main__":
    main()
