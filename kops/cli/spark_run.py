"""Running the sizes job from the CLI: a Spark session that keeps its start-up noise out of kops's output, and
a progress bar of the job's stages (quiet when stderr is not a terminal).

The JVM's own stderr (the incubator-module warning, log4j's start-up lines, any later error log) goes to a log
file named on failure, and removed, with the job's archive for other machines, after a run that does not fail;
Spark's logging is errors only (kops/sizes/log4j2.properties).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from kops.cli import console
from kops.errors import EnvironmentProblem, KopsError

LOG4J2_CONFIG = Path(__file__).resolve().parents[1] / "sizes" / "log4j2.properties"
STAGE = re.compile(r"^stage (\d+)/(\d+): (.*)$")
# The job's one source is spark/sizes_job.py (where spark-submit users find it); a wheel carries that file as
# kops/sizes/spark_job.py (pyproject.toml's force-include), a checkout or an editable install has spark/.
JOB_MODULES = ("kops.sizes.spark_job", "spark.sizes_job")


def require_spark_extra(command: str, *modules: str) -> None:
    """One line, not an ImportError, when the optional `spark` extra (PySpark, pyarrow) is not installed."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise EnvironmentProblem(f"{command} needs {' and '.join(missing)} (not installed)",
                                 hint="install kops's Spark extra: pip install 'kops[spark] @ git+URL@REF' "
                                      "(README, Installing kops as a tool)")


def sizes_job(command: str = "the Spark job") -> ModuleType:
    """The PySpark sizes job, from the wheel or from the repository (PySpark checked first)."""
    require_spark_extra(command, "pyspark")
    for name in JOB_MODULES:
        if importlib.util.find_spec(name.rpartition(".")[0]) and importlib.util.find_spec(name):
            return importlib.import_module(name)
    raise EnvironmentProblem("the Spark job (spark/sizes_job.py) is not installed with kops",
                             hint="reinstall kops with its Spark extra: pip install 'kops[spark] @ git+URL@REF'")


@contextmanager
def _jvm_stderr_to(log: Path) -> Iterator[None]:
    """The JVM started inside inherits fd 2 pointed at `log` (for its whole life); ours is restored after."""
    sys.stderr.flush()
    saved = os.dup(2)
    target = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(target, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(target)


def _job_archive() -> str:
    """The job and the one kops module it imports, zipped for executors on other machines (spark-submit's
    --py-files) under the name the driver imported it by; local mode imports them from this interpreter."""
    import kops  # noqa: PLC0415 - only a non-local master needs the archive
    from kops import units  # noqa: PLC0415 - as kops

    job = sizes_job()
    package = job.__name__.rpartition(".")[0].replace(".", "/")
    path = Path(tempfile.gettempdir()) / f"kops-sizes-job-{os.getpid()}.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for module, name in ((kops, "kops/__init__.py"), (units, "kops/units.py"),
                             (job, job.__name__.replace(".", "/") + ".py")):
            archive.write(str(module.__file__), name)
        if package != "kops":
            archive.writestr(f"{package}/__init__.py", "")
    return str(path)


def local_driver_memory() -> str:
    """In local mode the driver is the executor too: a third of this machine's memory, 1 to 6 GiB (6 GiB
    summarises 200 million samples in under four minutes on two cores; bench/RESULTS.md)."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return f"{max(1, min(6, total // 3 // 2**30))}g"


@contextmanager
def spark_session(master: str, driver_memory: str | None = None) -> Iterator[Any]:
    """A session for the sizes job on `master` (local[*], spark://HOST:PORT, yarn, k8s://...)."""
    from pyspark.sql import SparkSession  # noqa: PLC0415 - Spark only loads for the commands that run it

    if driver_memory is None and master.startswith("local"):
        driver_memory = local_driver_memory()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # local workers run this interpreter (and its kops)
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no "hostname resolves to loopback" warning
    log = Path(tempfile.gettempdir()) / f"kops-spark-{os.getpid()}.log"
    logging_config = f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()}"
    if console.err.is_terminal:
        console.err.print(f"[dim]starting Spark ({master})[/]")
    builder = SparkSession.builder
    if driver_memory is not None:
        builder = builder.config("spark.driver.memory", driver_memory)
    with _jvm_stderr_to(log):
        spark = (builder.master(master).appName("kops-sizes").config("spark.ui.enabled", "false")
                 .config("spark.ui.showConsoleProgress", "false")
                 .config("spark.driver.extraJavaOptions", logging_config)
                 .config("spark.executor.extraJavaOptions", logging_config)
                 .config("spark.sql.session.timeZone", "UTC")
                 .config("spark.sql.shuffle.partitions", str(max(4, 2 * (os.cpu_count() or 1)))).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    archive = None if master.startswith("local") else _job_archive()
    if archive is not None:
        spark.sparkContext.addPyFile(archive)
    failed = False  # the log stays only where the failure's message names it
    try:
        yield spark
    except KopsError:
        raise
    except Exception as exc:  # noqa: BLE001 - a Spark failure is one line, with --debug for the trace
        failed = True
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise KopsError(f"the Spark job failed: {first}", hint=f"Spark's log is {log}; --debug shows the "
                                                               f"trace") from exc
    finally:
        spark.stop()
        if archive is not None:
            Path(archive).unlink(missing_ok=True)
        if not failed:
            log.unlink(missing_ok=True)


@contextmanager
def stage_progress(title: str) -> Iterator[Callable[[str], None]]:
    """A callback for the job's "stage i/n: what" lines: a bar on a terminal, silence when piped."""
    if not console.err.is_terminal:
        yield lambda _line: None
        return
    with Progress(TextColumn(f"{title} [progress.description]{{task.description}}"), BarColumn(),
                  TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(), console=console.err,
                  transient=True) as bar:
        task = bar.add_task("", total=None)

        def said(line: str) -> None:
            found = STAGE.match(line)
            if found:
                done, total, what = int(found.group(1)) - 1, int(found.group(2)), found.group(3)
                bar.update(task, completed=done, total=total, description=what)

        yield said
