"""The manager of a run's warm jobs, a thread of the Snakemake process: it answers each job's `python` (shim.py)
with the socket of the server that may run it, starting that server on the first job of its key."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from clipeval.warm_jobs.decide import PRELOAD, ServerKey, differing_variables, server_environment, server_key
from clipeval.warm_jobs.shim import write_shim

REQUEST_BYTES = 1 << 20
SOCKET_WAIT_SECONDS = 30


FOLDER_PREFIX = "clipeval-jobs-"


def remove_stale_folders() -> None:
    """The folders of runs whose Snakemake has ended without removing them (killed): their sockets answer no one."""
    for folder in Path(tempfile.gettempdir()).glob(f"{FOLDER_PREFIX}*-*"):
        pid = folder.name[len(FOLDER_PREFIX) :].split("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)


class Server:
    def __init__(self, process: subprocess.Popen, socket_path: str, first_env: dict):
        self.process, self.socket_path, self.first_env = process, socket_path, first_env


class WarmJobs:
    """Start with start(); the folder to put first on the jobs' PATH is `bin`. close() ends the servers (jobs
    running in them finish, as they would in their own interpreters). Each job's decision goes to `log`."""

    def __init__(self, profile: str, log: Path, python: str = sys.executable):
        self.profile, self.log_path, self.python = profile, log, python
        self.servers: dict = {}
        self.lock = threading.Lock()
        remove_stale_folders()
        # Short (a socket's path has about 100 bytes), and named by this process, whose end makes it stale.
        self.folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-"))
        self.bin = self.folder / "bin"
        self.listener = self.log = None

    def start(self) -> Path:
        self.bin.mkdir()
        manager_socket = str(self.folder / "manager.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.listener.bind(manager_socket)
        self.listener.listen(128)
        write_shim(self.bin, self.python, manager_socket)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log = open(self.log_path, "a", buffering=1)
        threading.Thread(target=self._answer, daemon=True).start()
        return self.bin

    def _answer(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed
                return
            with connection:
                try:
                    job = json.loads(connection.recv(REQUEST_BYTES))
                    connection.send(self.server_socket(job["args"], job["cwd"], job["env"]).encode())
                except (OSError, ValueError, KeyError):
                    pass

    def server_socket(self, args: list[str], cwd: str, env: dict) -> str:
        """The socket of the server that runs this job, or '' for a new interpreter; logged either way."""
        key, why = server_key(args, env, self.profile)
        socket_path = ""
        if key is not None:
            any_threads = key.threads is None
            with self.lock:
                key = self._server_for(key, env)
                if key not in self.servers:  # None where it could not start: its jobs run in new interpreters
                    self.servers[key] = self._started(key, cwd, env)
                server = self.servers[key]
            differing = (
                differing_variables(env, server.first_env, any_threads) if server else ["the server did not start"]
            )
            if differing:
                why = f"sets {', '.join(differing)} otherwise" if server else differing[0]
            else:
                socket_path = server.socket_path
        command = args[2] if len(args) > 2 else " ".join(args)
        self.log.write(f"warm {key.name} {command}\n" if socket_path else f"cold {command}: {why}\n")
        return socket_path

    def _server_for(self, key: ServerKey, env: dict) -> ServerKey:
        """The key of the server a job of `key` forks from: for a job of any thread count the first server of its
        kind and profile that started, else one of the job's own threads."""
        if key.threads is not None:
            return key
        started = [
            known
            for known, server in self.servers.items()
            if server is not None and (known.kind, known.profile) == (key.kind, key.profile)
        ]
        return started[0] if started else ServerKey(key.kind, key.profile, env.get("OMP_NUM_THREADS", ""))

    def _started(self, key, cwd: str, env: dict) -> Server | None:
        socket_path = str(self.folder / f"{key.name}.sock")
        loaded_under = server_environment(key, env)
        pinned = {name: value for name, value in loaded_under.items() if env.get(name) != value}
        arguments = [socket_path, json.dumps(PRELOAD[key.kind]), json.dumps(pinned)]
        process = subprocess.Popen(
            [self.python, "-m", "clipeval.warm_jobs.server", *arguments],
            stdin=subprocess.PIPE,
            cwd=cwd,
            env=loaded_under,
            start_new_session=True,
        )
        deadline = time.monotonic() + SOCKET_WAIT_SECONDS
        while not os.path.exists(socket_path):
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                return None
            time.sleep(0.01)
        return Server(process, socket_path, env)

    def close(self) -> None:
        if self.listener is not None:
            self.listener.close()
        if self.log is not None:
            self.log.close()
        servers = [server for server in self.servers.values() if server is not None]
        for server in servers:
            server.process.stdin.close()
        for server in servers:
            try:
                server.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.process.kill()
        self.servers.clear()
        shutil.rmtree(self.folder, ignore_errors=True)


def started(profile: str, log: Path) -> WarmJobs | None:
    """A run's warm jobs, started; None where the machine refuses (no writable temporary folder, or logs/):
    every job then starts an interpreter of its own, as it would without them."""
    jobs = None
    try:
        jobs = WarmJobs(profile, log)
        jobs.start()
    except OSError:
        if jobs is not None:
            jobs.close()
        return None
    return jobs
