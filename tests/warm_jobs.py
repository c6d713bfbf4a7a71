"""Run the workflow's `python -m clipeval` jobs in forks of processes that have already imported their libraries.

A job of the tests' small experiments spends most of its CPU time starting:
an extraction job imports torch and open_clip (about 2.5 CPU seconds) to
encode a few dozen images, a plot job imports matplotlib. The suite runs
several hundred jobs. Each pytest worker starts its servers once, one for
each kind of command and thread count the rules give (SERVERS): "torch"
imports what the commands that compute with torch need, under the
environment the portable numerics profile pins before importing torch;
"plain" imports what the other commands need, and never torch.

The Snakemake runs of warm_snakemake.py find a `python` first on their PATH
that asks the server for the job's kind and thread count to run it: the server forks, the
fork takes the job's working directory, environment, standard streams and
arguments, runs `clipeval` as `python -m` would, and the job's `python`
exits with its status. The fork exits when that `python` is killed, as the
job would. Everything else goes to the real interpreter (exec, no fork): any
other program (`python -m snakemake`), and any job whose environment differs
from the server's in a variable that acts when a library loads (PYTHON*,
OMP_*, MKL_*, a SLURM job's, ...) or that asks for native numerics. A fork
runs the job's own copy of the package: the servers never import clipeval.

Set CLIPEVAL_COLD_JOBS=1 to run every job in a new interpreter, CLIPEVAL_WARM_JOBS_LOG=FILE to have
each server add a line to FILE for each job it was asked to run: "warm" or "cold", and the command.
"""

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from clipeval.warm_jobs.decide import THREAD_VARIABLES

# Commands that import torch: all but decode-pixels and check-models pin the numerics profile and compute with
# torch; decode-pixels loads images with torch's DataLoader through open_clip's transforms, PIL computing, and
# check-models computes nothing, so the profile the torch servers pinned changes nothing of what they write.
TORCH_COMMANDS = ("train", "extract-features", "describe-model", "encode-classes", "decode-pixels", "check-models")
# Commands that choose a library's code path before it loads (score-probe holds OpenBLAS to its AVX2 kernels):
# a server's numpy is loaded already, so they run in a new interpreter.
COLD_COMMANDS = ("score-probe",)

PRELOADED = {
    "torch": ("numpy", "PIL.Image", "lmdb", "jsonlines", "tqdm", "torch", "torchvision", "open_clip"),
    "plain": ("numpy", "PIL.Image", "lmdb", "jsonlines", "tqdm", "yaml", "faiss", "matplotlib", "matplotlib.pyplot"),
}

# Snakemake gives each job its thread count in these variables, which libraries read when they load: a server
# has them set as the jobs it runs do. One server for each kind and thread count that the rules use.
SERVERS = (("torch", 2), ("torch", 1), ("plain", 1), ("plain", 2))

# Set to 1, a fork lists at the end of the job's standard error the modules of the package it loaded, one line
# each: "loaded module: NAME" (what -X importtime shows of a new interpreter's job, which a fork cannot show).
MODULES_VARIABLE = "CLIPEVAL_WARM_JOBS_MODULES"

# Variables that may differ between a job and its server: what a job's shell sets, and what the fork adopts
# (the temporary directory is looked up again in the fork). CLIPEVAL_WARM_JOBS, which snakemake_runner sets for
# every run, is read by the workflow as it plans, never by a job.
ADOPTED = (
    "PATH", "PYTHONPATH", "PWD", "OLDPWD", "SHLVL", "_", "PYTEST_CURRENT_TEST", "SNAKEMAKE_OUTPUT_CACHE",
    "TMPDIR", "TEMP", "TMP", "TEMPDIR", MODULES_VARIABLE, "CLIPEVAL_WARM_JOBS",
)  # fmt: skip

SHIM = r"""#!{python} -IS
import json, os, socket, sys

args = sys.argv[1:]


def real_interpreter():
    # a job asked to list the modules it loads does so with -X importtime
    listed = os.environ.get({modules_variable!r}) == "1" and args[:2] == ["-m", "clipeval"]
    listing = ["-X", "importtime"] if listed else []
    os.execv({python!r}, [{python!r}, *listing, *args])


if args[:2] != ["-m", "clipeval"] or len(args) < 3 or args[2] in {cold_commands!r}:
    real_interpreter()
kind = "torch" if args[2] in {torch_commands!r} else "plain"
connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
try:
    connection.connect({sockets!r}[f"{{kind}}-{{os.environ.get('OMP_NUM_THREADS')}}"])
    request = json.dumps({{"args": args, "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
    socket.send_fds(connection, [request], [0, 1, 2])
    reply = connection.recv(64)
except (OSError, KeyError):
    reply = b""
if reply != b"warm":
    connection.close()
    real_interpreter()
status = connection.recv(64)
sys.exit(int(status) if status else 137)
"""

SERVER = r"""
import atexit, importlib, json, os, runpy, selectors, signal, socket, sys, tempfile, threading, traceback

kind, socket_path, settings = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
reference = settings["reference_env"]
pinned = settings["pinned_env"]
adopted = set(settings["adopted"])
for name in settings["preload"]:
    importlib.import_module(name)
# sys.path as a new interpreter builds it, without this one's first entry and PYTHONPATH.
own_entries = {os.path.abspath(p) for p in reference.get("PYTHONPATH", "").split(os.pathsep) if p}
base_path = [p for p in sys.path[1:] if os.path.abspath(p) not in own_entries]


def differences(env):
    # The variables that keep a job from running in a fork: it sets them otherwise than the server.
    keys = (set(env) | set(reference)) - adopted - set(pinned)
    changed = [key for key in keys if env.get(key) != reference.get(key)]
    return sorted(changed + [key for key, value in pinned.items() if env.get(key, value).upper() != value.upper()])


def native_numerics(args):
    for index, arg in enumerate(args):
        if arg == "--numerics" and args[index + 1 : index + 2] != ["portable"]:
            return True
        if arg.startswith("--numerics=") and arg != "--numerics=portable":
            return True
    return False


def run_job(connection, request, fds, env):
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)

    def exit_when_the_job_is_killed():
        if not connection.recv(1):
            os._exit(137)

    threading.Thread(target=exit_when_the_job_is_killed, daemon=True).start()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None
    entries = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [os.getcwd(), *map(os.path.abspath, entries), *base_path]
    sys.argv = ["-m", *request["args"][2:]]
    status = 0
    try:
        runpy._run_module_as_main("clipeval")
    except SystemExit as stop:
        if stop.code is None:
            status = 0
        elif isinstance(stop.code, int):
            status = stop.code
        else:
            print(stop.code, file=sys.stderr)
            status = 1
    except BaseException:
        traceback.print_exc()
        status = 1
    atexit._run_exitfuncs()
    if env.get(settings["modules_variable"]) == "1":
        for name in sorted(sys.modules):
            if name.split(".")[0] == "clipeval":
                print(f"loaded module: {name}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    connection.send(str(status).encode())
    os._exit(status)


listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
listener.bind(socket_path)
listener.listen(64)
selector = selectors.DefaultSelector()
selector.register(listener, selectors.EVENT_READ)
selector.register(sys.stdin, selectors.EVENT_READ)
print("ready", flush=True)
running = True
while running:
    for key, _ in selector.select(timeout=1):
        if key.fileobj is sys.stdin:
            running = False
            break
        connection, _ = listener.accept()
        message, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
        request = json.loads(message)
        differing = differences(request["env"])
        if kind == "torch" and native_numerics(request["args"]):
            differing.append("--numerics")
        warm = not differing and len(fds) == 3
        if settings["log"]:
            with open(settings["log"], "a") as log:
                print("warm" if warm else "cold", *request["args"][2:3], *differing, file=log)
        if not warm:
            connection.send(b"cold")
        else:
            connection.send(b"warm")
            if os.fork() == 0:
                listener.close()
                run_job(connection, request, fds, {**request["env"], **pinned})
        for fd in fds:
            os.close(fd)
        connection.close()
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass
try:
    while True:
        os.wait()
except ChildProcessError:
    pass
"""


def cold_jobs_asked() -> bool:
    return os.environ.get("CLIPEVAL_COLD_JOBS") == "1"


def module_listing_env() -> dict:
    """The environment that has each job list the package's modules it loaded in its log: in a fork, see
    MODULES_VARIABLE; in a new interpreter, -X importtime's lines."""
    return {"PYTHONPROFILEIMPORTTIME": "1"} if cold_jobs_asked() else {MODULES_VARIABLE: "1"}


class WarmJobs:
    """The servers of one test process and the `python` that reaches them, started on first use."""

    def __init__(self, servers=SERVERS):
        self._kinds = servers  # (kind, threads) of each server
        self._python = None
        self._servers = []
        atexit.register(self.close)

    def python(self) -> str:
        """The interpreter path Snakemake runs as, whose directory the workflow puts first on its jobs' PATH."""
        if self._python is None:
            self._python = self._start()
        return self._python

    def _start(self) -> str:
        from clipeval.numerics import PORTABLE_ENVIRONMENT

        directory = self._directory = Path(tempfile.mkdtemp(prefix="warm-jobs-"))
        sockets = {f"{kind}-{threads}": str(directory / f"{kind}-{threads}.sock") for kind, threads in self._kinds}
        servers = self._servers
        for kind, threads in self._kinds:
            path = sockets[f"{kind}-{threads}"]
            reference = {**os.environ, **dict.fromkeys(THREAD_VARIABLES, str(threads))}
            pinned = PORTABLE_ENVIRONMENT if kind == "torch" else {}
            settings = {
                "reference_env": reference,
                "pinned_env": pinned,
                "adopted": ADOPTED,
                "preload": PRELOADED[kind],
                "log": os.environ.get("CLIPEVAL_WARM_JOBS_LOG"),
                "modules_variable": MODULES_VARIABLE,
            }
            server = subprocess.Popen(
                [sys.executable, "-c", SERVER, kind, path, json.dumps(settings)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env={**reference, **pinned},
                text=True,
            )
            servers.append(server)
        for server in servers:
            if server.stdout.readline().strip() != "ready":
                raise RuntimeError(f"a warm-jobs server did not start (exit status {server.wait()})")
        shim = directory / "bin/python"
        shim.parent.mkdir()
        shim.write_text(
            SHIM.format(
                python=sys.executable,
                sockets=sockets,
                torch_commands=TORCH_COMMANDS,
                cold_commands=COLD_COMMANDS,
                modules_variable=MODULES_VARIABLE,
            ),
        )
        shim.chmod(0o755)
        return str(shim)

    def running_forks(self) -> set[int]:
        """The process ids of the forks running jobs now."""
        servers = {str(server.pid) for server in self._servers}
        forks = set()
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:  # ended meanwhile
                continue
            if fields[1] in servers:  # the parent's process id
                forks.add(int(stat.parent.name))
        return forks

    def close(self):
        """Stop the servers, and any job still running (a test that failed may leave one). Waited for, with their
        jobs, so that the jobs' CPU time counts among this process's children (scripts/suite_census.py)."""
        for fork in self.running_forks():
            os.kill(fork, signal.SIGKILL)
        for server in self._servers:
            server.stdin.close()
        for server in self._servers:
            server.wait()
        self._servers.clear()
        if self._python is not None:
            shutil.rmtree(self._directory)
        self._python = None


warm_jobs = WarmJobs()
