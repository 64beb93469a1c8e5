"""What `apply`, `rollback`, `status` and `cancel` share: naming the cluster, loading the plan, signals, and
showing an execution's progress (rich bars on a terminal, plain lines when piped, JSON lines for machines)."""

from __future__ import annotations

import hashlib
import json
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

from kops.cli import console
from kops.cli.options import OutputFormat
from kops.errors import UsageError
from kops.executor.events import (
    BatchDone,
    BatchProgressed,
    BatchStarted,
    CapacityUnknown,
    Done,
    Event,
    LostLock,
    Message,
    MoveDone,
    MoveStarted,
    OrderRestored,
    Resumed,
    RollingProgressed,
    RollingStarted,
    Stalled,
    Started,
    Step,
    Stopped,
)
from kops.executor.executor import Controls
from kops.model import plan_format
from kops.model.plan import Plan
from kops.units import format_size


def load_plan(path: Path, accept_edited: bool = False) -> tuple[Plan, str]:
    """The plan and its digest (sha256 of the file, 16 hex digits): what records are keyed by. A plan edited
    after kops wrote it is refused unless `accept_edited` (--accept-edited-plan)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read the plan: {exc.strerror}", where=str(path),
                         hint="write one with `kops plan PLAYBOOK -o FILE`") from None
    return plan_format.loads(data, str(path), accept_edited), hashlib.sha256(data).hexdigest()[:16]


def install_signals(controls: Controls) -> None:
    """First SIGINT/SIGTERM: stop at the next checkpoint. Second: cancel the batch in flight too."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        if controls.stop.is_set():
            controls.cancel_now.set()
            console.warning("second interrupt: cancelling the batch in flight")
        else:
            controls.stop.set()
            console.warning(f"{signal.Signals(signum).name}: stopping after the batch in flight "
                            f"(interrupt again to cancel it)")

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


class Reporter:
    """Turns executor events into what a person or a machine reads."""

    def __init__(self, output_format: OutputFormat, plain_every: float = 5.0, to_stderr: bool = False) -> None:
        self.json = output_format is OutputFormat.json
        self.screen = console.err if to_stderr else console.out  # stderr: a command whose stdout is a document
        self.live = not self.json and self.screen.is_terminal
        self.plain_every = plain_every
        self._last_plain = 0.0
        self._progress: Progress | None = None
        self._overall: TaskID | None = None
        self._batch: TaskID | None = None
        self._by_bytes = False
        self._moves: dict[str, TaskID] = {}  # rolling: a bar per move in flight

    def __call__(self, event: Event) -> None:
        if self.json:
            sys.stdout.write(json.dumps(event.to_json(), sort_keys=True) + "\n")
            sys.stdout.flush()
            return
        self._render(event)

    def _render(self, event: Event) -> None:
        match event:
            case Started():
                self._start(event)
            case Resumed():
                self._print(f"resuming {event.kind} {event.execution}", "bold")
            case Stopped():
                self._stopped(event)
            case Done():
                self.close()
                self._print(f"execution {event.execution} done", "bold green")
            case Message() | Step() | Stalled():
                self._print(event.text)
            case OrderRestored():
                self._order_restored(event)
            case CapacityUnknown():
                one = len(event.brokers) == 1
                self._print(f"{'broker' if one else 'brokers'} {', '.join(map(str, event.brokers))}: {event.reason}; "
                            f"{'its disk is' if one else 'their disks are'} not checked before moves")
            case LostLock():  # the error that follows says it
                pass
            case _:
                self._render_moves(event)

    def _render_moves(self, event: Event) -> None:
        """Batches, rolling moves and their progress."""
        match event:
            case BatchStarted():
                self._batch_start(event)
            case BatchProgressed():
                self._batch_progress(event)
            case BatchDone():
                self._batch_done(event)
            case RollingStarted():
                cap = f", {event.max_moves} in all" if event.max_moves else ""
                self._print(f"rolling: {event.moves} move(s), at most {event.max_moves_per_broker} in flight per "
                            f"broker{cap}")
            case MoveStarted():
                self._move_start(event)
            case RollingProgressed():
                self._rolling_progress(event)
            case MoveDone():
                self._move_done(event)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    # -- text rendering ------------------------------------------------------------------------------------

    def _print(self, text: str, style: str = "") -> None:
        target = self._progress.console if self._progress is not None else self.screen
        target.print(f"[{style}]{text}[/]" if style else text, markup=bool(style), highlight=False)

    def _start(self, event: Started) -> None:
        self._by_bytes = event.bytes > 0
        total = event.bytes if self._by_bytes else event.partitions
        rolling = event.mode == "rolling"
        self._print(f"execution {event.execution} ({event.kind}" + (", rolling): " if rolling else "): ")
                    + ("" if rolling else f"{event.batches} batch(es), ") + f"{event.partitions} partition(s)"
                    + (f", {format_size(event.bytes)}" if self._by_bytes else ""), "bold")
        if self.live:
            self._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                      TextColumn("{task.fields[amount]}"),
                                      TextColumn("{task.fields[rate]}"), TimeRemainingColumn(), console=self.screen,
                                      transient=False)
            self._progress.start()
            self._overall = self._progress.add_task("overall", total=max(total, 1), amount="", rate="")

    def _batch_start(self, event: BatchStarted) -> None:
        estimate = event.estimate_seconds
        how = "re-attached to" if event.reattached else "starting"
        self._print(f"{how} batch {event.batch}/{event.batches}: {event.partitions} partition(s)"
                    + (f", {format_size(event.bytes)}" if event.bytes else "")
                    + (f", estimated {estimate:.0f} s" if estimate else ""))
        if self._progress is not None:
            if self._batch is not None:
                self._progress.remove_task(self._batch)
            total = event.bytes if self._by_bytes else event.partitions
            self._batch = self._progress.add_task(f"batch {event.batch}/{event.batches}", total=max(total, 1),
                                                  amount="", rate="")

    def _move_start(self, event: MoveStarted) -> None:
        name = f"{event.topic}-{event.partition}"
        if self._progress is not None:
            self._moves[name] = self._progress.add_task(f"  {name}", total=max(event.bytes, 1), amount="", rate="")

    def _move_done(self, event: MoveDone) -> None:
        name = f"{event.topic}-{event.partition}"
        task = self._moves.pop(name, None)
        if self._progress is not None and task is not None:
            self._progress.remove_task(task)
        self._print(f"{name} done in {event.seconds:.1f} s", "green")

    def _rolling_progress(self, event: RollingProgressed) -> None:
        amount = f"{format_size(event.bytes_done)}/{format_size(event.bytes_total)}" if self._by_bytes else ""
        rate = f"{format_size(event.rate)}/s" if event.rate else ""
        if self._progress is not None and self._overall is not None:
            self._progress.update(self._overall, completed=event.bytes_done if self._by_bytes else event.done,
                                  amount=amount or f"{event.done}/{event.partitions} moves", rate=rate)
            for move in event.in_flight:
                task = self._moves.get(f"{move.topic}-{move.partition}")
                if task is not None:
                    self._progress.update(task, completed=move.bytes_done, total=max(move.bytes_total, 1),
                                          amount=f"{format_size(move.bytes_done)}/{format_size(move.bytes_total)}")
            return
        if self._plain_line_due():
            self._print(f"rolling: {event.done}/{event.partitions} moves done, {len(event.in_flight)} in "
                        f"flight" + (f", {amount}" if amount else "") + (f", {rate}" if rate else "") + _eta(event.eta))

    def _batch_progress(self, event: BatchProgressed) -> None:
        amount = (f"{format_size(event.bytes_done)}/{format_size(event.bytes_total)}" if self._by_bytes
                  else f"{event.done}/{event.partitions} partitions")
        rate = f"{format_size(event.rate)}/s" if event.rate else ""
        if self._progress is not None and self._batch is not None and self._overall is not None:
            self._progress.update(self._batch, completed=event.bytes_done if self._by_bytes else event.done,
                                  amount=amount, rate=rate)
            if self._by_bytes:
                overall = f"{format_size(event.overall_bytes_done)}/{format_size(event.overall_bytes_total)}"
                self._progress.update(self._overall, completed=event.overall_bytes_done, amount=overall, rate=rate)
            return
        if self._plain_line_due():
            self._print(f"batch {event.batch}/{event.batches}: {event.done}/{event.partitions} partitions"
                        + (f", {amount}" if self._by_bytes else "") + (f", {rate}" if rate else "") + _eta(event.eta))

    def _plain_line_due(self) -> bool:
        """Without a live display, a progress line every `plain_every` seconds."""
        now = time.monotonic()
        if now - self._last_plain < self.plain_every:
            return False
        self._last_plain = now
        return True

    def _batch_done(self, event: BatchDone) -> None:
        if self._progress is not None and self._overall is not None and not self._by_bytes:
            self._progress.advance(self._overall, 0)
        self._print(f"batch {event.batch}/{event.batches} done in {event.seconds:.1f} s", "green")

    def _order_restored(self, event: OrderRestored) -> None:
        """After a cancellation: the original replica order and preferred leaders, or why not."""
        reordered, elected = event.reordered, event.elected
        self._print(f"{event.partitions} cancelled partition(s) back on their original replicas; "
                    + (f"{len(reordered)} put back in their original order ({_first(reordered)})" if reordered
                       else "all in their original order")
                    + (f"; preferred leader elected for {len(elected)} ({_first(elected)})" if elected else ""))
        for line in event.left:
            self._print(f"left as Kafka put it: {line}", "yellow")

    def _stopped(self, event: Stopped) -> None:
        self.close()
        self._print(f"stopped: {event.reason}", "yellow")
        self._print(f"the record is {event.execution}; `kops apply --resume` continues, `kops rollback` undoes")


def _eta(eta: float | None) -> str:
    return f", ETA {eta:.0f} s" if eta else ""


def _first(names: tuple[str, ...], shown: int = 5) -> str:
    return ", ".join(names[:shown]) + (f", ... ({len(names)} in all)" if len(names) > shown else "")
