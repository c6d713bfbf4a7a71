"""Run Snakemake's command line in a fork of a process that has already imported it.

`python -m snakemake` spends most of a dry run's CPU time before and around
reading the Snakefile: importing Snakemake, collecting its plugins (each
installed `snakemake_*_plugin_*` package is imported) and importing what the
run needs. The suite starts Snakemake over a hundred times. Each pytest
worker starts one server that does those imports once; each run is a fork of
it that takes the run's working directory, environment, arguments and output
files and calls `snakemake.cli.main`, as `python -m snakemake` does once its
imports are done, and exits with its status.

Variables that act when Python starts (PYTHONPATH and the other PYTHON*)
cannot reach a process that has started already, so a run that sets one gets
a new interpreter (`needs_fresh_interpreter`).
"""

import atexit
import json
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from warm_jobs import cold_jobs_asked, warm_jobs

# One JSON request per line on stdin, its exit status as one line on stdout.
SERVER = r"""
import importlib.util, json, os, sys

import snakemake.cli
from snakemake_interface_executor_plugins.registry import ExecutorPluginRegistry
from snakemake_interface_logger_plugins.registry import LoggerPluginRegistry
from snakemake_interface_report_plugins.registry import ReportPluginRegistry
from snakemake_interface_scheduler_plugins.registry import SchedulerPluginRegistry
from snakemake_interface_storage_plugins.registry import StoragePluginRegistry

# Each registry is a singleton that imports every installed plugin when first made.
for registry in (ExecutorPluginRegistry, LoggerPluginRegistry, ReportPluginRegistry, SchedulerPluginRegistry,
                 StoragePluginRegistry):
    registry()
# Modules a run imports later (Snakemake's own, and what the workflow's planning code uses); no clipeval
# module, which each run imports from its own copy of the workflow.
for name in ("snakemake.api", "snakemake.dag", "snakemake.workflow", "snakemake.utils", "jsonschema",
             "referencing", "requests", "smart_open", "yaml", "PIL.Image", "jsonlines", "lmdb"):
    importlib.import_module(name)
MAIN_PATH = importlib.util.find_spec("snakemake.__main__").origin

for line in sys.stdin:
    request = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    child = os.fork()
    if child == 0:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], os.O_WRONLY),
                                (2, request["stderr"], os.O_WRONLY)):
            os.dup2(os.open(path, flags), fd)
        # What `python -m snakemake` has: the module's path as argv[0], the working directory first on the path.
        sys.argv = [MAIN_PATH, *request["args"]]
        sys.path[0] = os.getcwd()
        # The workflow puts this interpreter's directory first on its jobs' PATH (warm_jobs.py).
        sys.executable = request["python"]
        snakemake.cli.main(request["args"])  # exits
    _, status = os.waitpid(child, 0)
    print(os.waitstatus_to_exitcode(status), flush=True)
"""


def needs_fresh_interpreter(overrides: dict) -> bool:
    return any(name.startswith("PYTHON") for name in overrides)


class WarmSnakemake:
    """The server of one test process, started on first use."""

    def __init__(self):
        self._server = None
        self._lock = threading.Lock()

    def _started(self):
        if self._server is None or self._server.poll() is not None:
            self._server = subprocess.Popen(
                [sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
            atexit.register(self._stop, self._server)
        return self._server

    @staticmethod
    def _stop(server):
        # Waited for, so that its CPU time counts among this process's children (scripts/suite_census.py)
        server.stdin.close()
        server.wait()

    def run(self, args, cwd, env) -> subprocess.CompletedProcess:
        """What subprocess.run([python, -m, snakemake, *args], cwd, env, capture_output, text) returns."""
        args = [str(arg) for arg in args]
        with self._lock, tempfile.TemporaryDirectory(prefix="snakemake-output-") as scratch:
            stdout, stderr = Path(scratch, "stdout"), Path(scratch, "stderr")
            stdout.touch()
            stderr.touch()
            server = self._started()
            python = sys.executable if cold_jobs_asked() else warm_jobs.python()
            request = {
                "args": args,
                "cwd": str(cwd),
                "env": env,
                "stdout": str(stdout),
                "stderr": str(stderr),
                "python": python,
            }
            server.stdin.write(json.dumps(request) + "\n")
            server.stdin.flush()
            status = server.stdout.readline()
            if not status:
                raise RuntimeError(f"the Snakemake server ended (exit status {server.wait()})")
            return subprocess.CompletedProcess(
                [sys.executable, "-m", "snakemake", *args],
                int(status),
                stdout.read_text(),
                stderr.read_text(),
            )


warm_snakemake = WarmSnakemake()
