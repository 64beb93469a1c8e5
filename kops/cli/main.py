"""The `kops` entry point: the command tree, global options, and the one place errors become exit codes.

Commands load when they run: `kops --help` and `kops --version` import typer and this module only (cron and CI
call kops often, and the commands' own imports, kafka-python, pydantic, yaml, the executor, rich, take a second).
The listing's one-line summaries are declared here, in COMMANDS; each command's own help is its docstring.
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from typer._click import exceptions as click_errors  # typer (pinned >= 0.29) vendors click
from typer.core import TyperGroup

from kops import __version__
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


@dataclass(frozen=True)
class Command:
    """One command of the tree, imported on first use: `module:attribute`, a command function or a typer app."""

    target: str
    summary: str  # its line in `kops --help`
    prepare: Callable[[], None] | None = None  # run first (kops lab adds its demo)

    def load(self, name: str) -> Any:
        if self.prepare is not None:
            self.prepare()
        module, _, attribute = self.target.partition(":")
        found = getattr(importlib.import_module(module), attribute)
        tree = typer.Typer(rich_markup_mode=None, add_completion=False, pretty_exceptions_enable=False)
        if isinstance(found, typer.Typer):
            tree.add_typer(found, name=name)
        else:
            tree.command(name)(found)
        command = typer.main.get_group(tree).commands[name]  # built as the root builds its own (plain help)
        command.name, command.short_help = name, self.summary
        return command


def _lab_demo() -> None:
    """`kops lab demo` is a lab command that runs kops's own command lines through main()."""
    from kops.cli import demo, lab  # noqa: PLC0415 - loaded for `kops lab` only

    if "demo" not in {info.name for info in lab.app.registered_commands}:
        lab.app.command("demo")(demo.demo)
    demo.attach_cli(main)


COMMANDS = {
    "state": Command("kops.cli.state:state", "Read a cluster's layout: brokers, racks, topics, leaders, ISR, configs."),
    "validate": Command("kops.cli.validate:validate", "Check a playbook and its inventory without touching a cluster."),
    "plan": Command("kops.cli.plan:plan", "Compute what would change: batches of moves with throttles and estimates."),
    "apply": Command("kops.cli.apply:apply", "Carry out a plan in batches, with a checkpoint at each batch boundary."),
    "status": Command("kops.cli.status:status", "Show the running (or last) execution, reassignments and throttles."),
    "cancel": Command("kops.cli.status:cancel", "Ask the running execution to stop at its next checkpoint."),
    "rollback": Command("kops.cli.apply:rollback", "Undo what an execution of this plan did, last batch first."),
    "rebalance": Command("kops.cli.rebalance:rebalance", "Rebalance within limits, made for cron."),
    "rehearse": Command("kops.cli.rehearse:rehearse", "Rehearse a plan on a lab clone of its cluster and report."),
    "lab": Command("kops.cli.lab:app", "A local cluster on this machine: the kops engine or real Kafka.", _lab_demo),
    "sizes": Command("kops.cli.sizes:app", "Partition sizes: summarise raw observations with Spark, show them."),
}


class _Commands(MutableMapping[str, Any]):
    """The tree's commands by name: every name of COMMANDS is listed, and imported when it is looked up."""

    def __init__(self, declared: Mapping[str, Command], built: Mapping[str, Any]) -> None:
        self.declared = declared
        self.built = dict(built)

    def __getitem__(self, name: str) -> Any:
        if name not in self.built:
            self.built[name] = self.declared[name].load(name)
        return self.built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self.built[name] = command

    def __delitem__(self, name: str) -> None:
        del self.built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self.declared, *self.built]))

    def __len__(self) -> int:
        return len(set(self.declared) | set(self.built))


class LazyGroup(TyperGroup):
    """kops's root: lists COMMANDS by their summaries, imports only the command that runs."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.commands = _Commands(COMMANDS, self.commands)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, command.summary) for name, command in COMMANDS.items()])


app = typer.Typer(
    cls=LazyGroup,
    help=HELP,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
)

_debug = {"on": False}
_tree: list[Any] = []  # the click command tree, built by the first main() of a process and kept


def _command_tree() -> Any:
    """The tree typer builds from `app`, built once per process: tests and the demo run many command lines
    through main(), and building it (and the command it runs) again took 20 ms a time."""
    if not _tree:
        _tree.append(typer.main.get_command(app))
    return _tree[0]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kops {__version__}")
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
    printed = sys.modules.get("kops.cli.console")  # a command ran before in this process (tests, the demo)
    if printed is not None:
        printed.reset()
    _debug["on"] = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        code = _command_tree().main(args=argv, prog_name="kops", standalone_mode=False)
        code = int(code) if isinstance(code, int) else ExitCode.OK
    except KopsError as exc:
        if _debug["on"]:
            raise
        code = _error(exc, exc.exit_code)
    except click_errors.NoArgsIsHelpError as exc:
        typer.echo(exc.ctx.get_help() if exc.ctx else HELP)
        code = ExitCode.OK
    except click_errors.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx else "kops"
        code = _error(f"{exc.format_message()} (see '{where} --help')")
    except click_errors.ClickException as exc:
        code = _error(exc.format_message())
    except typer.Abort:  # what the vendored click raises too
        code = _error("aborted")
    except KeyboardInterrupt:
        code = _error("interrupted")
    if argv is None:
        sys.exit(code)
    return code


def _error(what: KopsError | str, code: ExitCode = ExitCode.ERROR) -> ExitCode:
    """One line on stderr (rich, so imported only when there is something to say)."""
    from kops.cli import console  # noqa: PLC0415 - rich costs a tenth of a second that --help does not pay

    console.error(what)
    return code


if __name__ == "__main__":
    main()
