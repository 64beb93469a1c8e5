"""Errors a user can cause, and the exit codes the CLI maps them to.

Every failure that is not a bug is a `KopsError`: it carries what went wrong, where (a file:line, a znode
path, a connect string) and what to do about it, so the CLI can print exactly one line. Exit codes are the
contract of docs/design/architecture.md §4 and docs/cli.md; scripts and cron jobs depend on them.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes of the `kops` command."""

    OK = 0  # done, or nothing to change
    ERROR = 1  # bad input, unreachable cluster, refused operation
    CHANGES = 2  # `plan --detailed-exitcode`: changes pending
    STOPPED = 3  # stopped at a checkpoint (cancel, signal, health stop), or not started: the cluster is not ready
    STALE = 4  # the plan no longer matches the cluster (drift)
    LOCKED = 5  # another execution holds the cluster lock


class KopsError(Exception):
    """A failure the user can act on. Rendered as one line: `where: what (hint)`."""

    exit_code: ExitCode = ExitCode.ERROR

    def __init__(self, what: str, *, where: str | None = None, hint: str | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.where = where
        self.hint = hint

    def one_line(self) -> str:
        text = f"{self.where}: {self.what}" if self.where else self.what
        if self.hint:
            text += f" ({self.hint})"
        return " ".join(text.split())


class UsageError(KopsError):
    """Command-line arguments that cannot work together or do not parse."""


class ConnectionFailed(KopsError):
    """A cluster (ZooKeeper ensemble) could not be reached or refused the session."""


class Refused(KopsError):
    """The cluster would not take a reassignment now (another one is in flight, or Kafka said no)."""


class NotAKafkaCluster(KopsError):
    """The ZooKeeper path holds no Kafka cluster (missing chroot, no /brokers)."""


class ZnodeFormatError(KopsError):
    """A znode's content is something Kafka itself would reject or misread."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(problem, where=path)
        self.path = path
        self.problem = problem


class NotReady(KopsError):
    """The cluster is in no state to start this now (a reassignment in flight, unhealthy): try again later."""

    exit_code = ExitCode.STOPPED


class DocumentError(KopsError):
    """A file kops reads (snapshot, plan, tool JSON) is malformed."""


class EnvironmentProblem(KopsError):
    """Something the machine lacks (Java, fetched jars, an optional extra, a free port)."""
