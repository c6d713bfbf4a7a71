"""A server of warm jobs: `python -m clipeval.warm_jobs.server SOCKET MODULES_JSON PINNED_JSON`.

It listens on SOCKET at once, so that the first jobs wait in its queue rather
than start interpreters of their own, then imports MODULES (those installed)
and forks once for each job: the fork takes the job's standard streams (passed
over the socket), working directory, environment (with PINNED, the variables
the server set before loading its libraries, over it) and arguments, runs the
clipeval command as `python -m clipeval` would, and sends back its exit
status. When the job's `python` ends first (killed with its job), the fork is
interrupted as a job is by Ctrl-C, which leaves no output. The server ends when
its standard input closes: the Snakemake run that started it has ended.
"""

import atexit
import importlib
import json
import os
import selectors
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback

# How long an interrupted job has to leave no output behind before its fork is ended whatever it is doing.
INTERRUPT_GRACE_SECONDS = 30
INTERRUPT_AGAIN_SECONDS = 0.5
REQUEST_BYTES = 1 << 20


def preload(modules: list[str]) -> None:
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:  # not installed: the jobs that need it fail as they would in a new interpreter
            pass


def cuda_started() -> bool:
    """Whether torch has started CUDA here: a fork could not use the GPU (CUDA does not survive a fork)."""
    torch = sys.modules.get("torch")
    return torch is not None and torch.cuda.is_initialized()


def take_interrupts(taken: threading.Event) -> None:
    """In the fork's main thread: the first SIGINT raises KeyboardInterrupt, as Ctrl-C does; the ones sent after
    it while the job leaves no output behind are ignored."""

    def handler(signum, frame):
        if not taken.is_set():
            taken.set()
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)


def interrupt_when_the_job_ends(connection, taken: threading.Event) -> None:
    """In a thread: the job's `python` closing the connection interrupts the fork, and ends it after a grace."""
    if connection.recv(1):
        return
    deadline = time.monotonic() + INTERRUPT_GRACE_SECONDS
    # Sent again until the main thread has taken it: one that lands between the interpreter's last look at its
    # signals and a blocking read (a job waiting for its input) waits for a look that never comes. To the main
    # thread: a signal to the process may be taken by this thread.
    while not taken.is_set() and time.monotonic() < deadline:
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        taken.wait(INTERRUPT_AGAIN_SECONDS)
    threading.Event().wait(max(0.0, deadline - time.monotonic()))
    os._exit(128 + signal.SIGINT)


def exit_status(stop: SystemExit) -> int:
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code
    print(stop.code, file=sys.stderr)
    return 1


def run_job(connection, request: dict, fds: list[int], pinned: dict) -> None:
    """In the fork: become the job (its environment, with what the server set before loading its libraries
    over it), run it, report its status, and exit."""
    taken = threading.Event()
    take_interrupts(taken)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update({**request["env"], **pinned})
    tempfile.tempdir = None
    sys.path[0] = os.getcwd()
    args = request["args"]
    sys.argv = ["-m", *args[2:]]
    threading.Thread(target=interrupt_when_the_job_ends, args=(connection, taken), daemon=True).start()
    try:
        from clipeval.cli import main

        status = main(args[2:])
    except SystemExit as stop:
        status = exit_status(stop)
    except BaseException:
        traceback.print_exc()
        status = 1
    # The job is over: its `python` ends as soon as it has the status, which must not interrupt this process.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    atexit._run_exitfuncs()  # what the end of an interpreter runs: os._exit below skips it
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    connection.send(str(status).encode())
    os._exit(status)


def reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def listening_socket(socket_path: str) -> socket.socket:
    """A socket listening at `socket_path`. The manager takes the path's existence for a server that listens, so
    the socket listens under another name first: a job connecting between bind and listen would be refused, and
    would run in a new interpreter."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(f"{socket_path}.new")
    listener.listen(128)
    os.rename(f"{socket_path}.new", socket_path)
    return listener


def serve(socket_path: str, modules: list[str], pinned: dict) -> None:
    listener = listening_socket(socket_path)
    preload(modules)
    if cuda_started():  # the jobs queued and to come then start interpreters of their own (shim.py)
        return
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(sys.stdin, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select(timeout=1):
            if key.fileobj is sys.stdin:
                return
            connection, _ = listener.accept()
            fds = []
            try:
                message, fds, _, _ = socket.recv_fds(connection, REQUEST_BYTES, 3)
                if len(fds) == 3 and message:
                    connection.send(b"started")
                    fork(listener, connection, json.loads(message), fds, pinned)
            except OSError:  # the job's `python` ended before its job started: nothing to run
                pass
            finally:
                for fd in fds:
                    os.close(fd)
                connection.close()
        reap()


def end_without_teardown() -> None:
    """End the server at once: an interpreter that imported torch, torchvision and open_clip takes over a second
    to tear its modules down (1.4 s on two cores), which the run's end waits for. The server has written no file
    and its forks are processes of their own, so nothing is lost by skipping it; its streams are flushed."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)


def fork(listener, connection, request: dict, fds: list[int], pinned: dict) -> None:
    if os.fork() == 0:
        try:
            listener.close()
            run_job(connection, request, fds, pinned)
        finally:
            os._exit(1)


if __name__ == "__main__":
    # Ctrl-C in the terminal reaches the jobs' `python`, which interrupts their forks; the server itself goes on
    # until its run ends.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    serve(sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]))
    end_without_teardown()
