"""Warm jobs (clipeval/warm_jobs/): which server may run a job, and a job run in a fork against the same job run
in a new interpreter. The workflow's own runs of them are checked in test_caching.py (the small experiment runs
warm), test_slurm.py (a cluster run, which starts none, gives the same bytes) and test_caching.py's kill test."""

import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import REPO

from clipeval.features.feature_files import write_features
from clipeval.warm_jobs.decide import THREAD_VARIABLES, ServerKey, differing_variables, server_key, wanted
from clipeval.warm_jobs.manager import WarmJobs

JOB = {"OMP_NUM_THREADS": "2", "PATH": "/bin", "HOME": "/root"}


def clipeval_args(*words):
    return ["-m", "clipeval", *words]


def test_a_torch_command_forks_from_a_server_of_its_profile_and_threads():
    assert server_key(clipeval_args("extract-features", "--numerics", "portable"), JOB, "portable") == (
        ServerKey("torch", "portable", "2"),
        "",
    )
    assert server_key(clipeval_args("train", "--numerics=native"), JOB, "portable")[0] == ServerKey(
        "torch", "native", "2"
    )
    # A torch command that takes no profile (it computes nothing) joins the run's; decode-pixels decodes in
    # processes of its own, so its threads are those of any server.
    assert server_key(clipeval_args("describe-model"), JOB, "native")[0] == ServerKey("torch", "native", "2")
    assert server_key(clipeval_args("decode-pixels"), JOB, "native")[0] == ServerKey("torch", "native", None)
    assert server_key(clipeval_args("score-retrieval"), {**JOB, "OMP_NUM_THREADS": "1"}, "portable")[0] == ServerKey(
        "plain", None, "1"
    )
    assert ServerKey("torch", "portable", "2").name == "torch-portable-2"


def test_jobs_a_fork_cannot_run_as_a_new_interpreter_would_start_one():
    assert server_key(["-m", "snakemake"], JOB, "portable") == (None, "not a clipeval command")
    assert server_key(clipeval_args("no-such-command"), JOB, "portable") == (None, "not a clipeval command")
    # score-probe holds OpenBLAS to its kernels before numpy loads.
    assert server_key(clipeval_args("score-probe"), JOB, "portable") == (
        None,
        "sets what its libraries read as they load",
    )
    clash = {**JOB, "MKL_CBWR": "AUTO"}
    assert server_key(clipeval_args("train", "--numerics", "portable"), clash, "portable") == (None, "sets MKL_CBWR")
    assert server_key(clipeval_args("train", "--numerics", "native"), clash, "portable")[0] is not None


def test_only_variables_read_at_run_time_may_differ_from_the_servers_first_job():
    assert differing_variables({**JOB, "PATH": "/usr/bin", "TMPDIR": "/scratch"}, JOB) == []
    # An activated venv exports PS1, and the non-interactive bash of a shell job unsets it.
    assert differing_variables(JOB, {**JOB, "PS1": "(.venv) $ "}) == []
    assert differing_variables({**JOB, "CUDA_VISIBLE_DEVICES": "1"}, JOB) == ["CUDA_VISIBLE_DEVICES"]
    assert differing_variables({k: v for k, v in JOB.items() if k != "HOME"}, JOB) == ["HOME"]


def test_a_job_of_any_threads_forks_from_the_first_server_of_its_kind_and_profile(tmp_path):
    decoding = {**JOB, "OMP_NUM_THREADS": "14", "MKL_NUM_THREADS": "14"}
    key = server_key(clipeval_args("decode-pixels"), decoding, "portable")[0]
    jobs = WarmJobs("portable", tmp_path / "warm_jobs.log")
    assert jobs._server_for(key, decoding) == ServerKey("torch", "portable", "14")  # none yet: one of its own
    jobs.servers = {
        ServerKey("plain", None, "2"): object(),
        ServerKey("torch", "native", "2"): object(),
        ServerKey("torch", "portable", "1"): None,  # did not start
        ServerKey("torch", "portable", "2"): object(),
    }
    assert jobs._server_for(key, decoding) == ServerKey("torch", "portable", "2")
    extracting = server_key(clipeval_args("extract-features"), decoding, "portable")[0]
    assert jobs._server_for(extracting, decoding) == ServerKey("torch", "portable", "14")
    # Its thread counts aside, it must set what the server's first job set.
    first = {**JOB, "MKL_NUM_THREADS": "2"}
    assert differing_variables(decoding, first, any_threads=True) == []
    assert differing_variables({**decoding, "HOME": "/tmp"}, first, any_threads=True) == ["HOME"]
    assert differing_variables(decoding, first) == ["MKL_NUM_THREADS", "OMP_NUM_THREADS"]
    shutil.rmtree(jobs.folder)


def test_warm_jobs_start_only_for_local_jobs_in_this_interpreter():
    assert wanted(2, set(), environ={}) == ""
    assert wanted(None, set(), environ={}) == "jobs run on a cluster"
    assert wanted(2, {"conda"}, environ={}) == "jobs run in their own software environment"
    assert wanted(2, set(), environ={"CLIPEVAL_WARM_JOBS": "0"}) == "CLIPEVAL_WARM_JOBS=0"


@pytest.fixture
def warm_jobs(tmp_path, monkeypatch):
    # A server that takes longer than a run allows to start leaves its jobs to new interpreters, which these tests
    # do not test: under the full suite's load on two cores, one took longer than 30 s to import its libraries.
    monkeypatch.setattr("clipeval.warm_jobs.manager.SOCKET_WAIT_SECONDS", 600)
    jobs = WarmJobs("portable", tmp_path / "logs/warm_jobs.log")
    jobs.start()
    yield jobs
    jobs.close()


def job_environment(first_on_path):
    return {
        **os.environ,
        "PATH": os.pathsep.join([str(first_on_path), os.environ["PATH"]]),
        "PYTHONPATH": str(REPO / "workflow"),
        "OMP_NUM_THREADS": "1",
    }


def run_both(warm_jobs, tmp_path, *words):
    """The command run by the warm run's `python` and by a new interpreter: {how: (status, output, stderr)}."""
    results = {}
    for how, python in (("warm", warm_jobs.bin / "python"), ("cold", sys.executable)):
        output = tmp_path / how / "gathered.jsonl"
        output.parent.mkdir()
        result = subprocess.run(
            [str(python), *clipeval_args(*words, "--output", str(output))],
            cwd=tmp_path,
            env=job_environment(warm_jobs.bin),
            capture_output=True,
            text=True,
        )
        results[how] = (result.returncode, output.read_bytes() if output.exists() else None, result.stderr)
    return results


@pytest.mark.slow
def test_a_forked_job_writes_the_bytes_and_says_the_words_of_a_new_interpreter(warm_jobs, tmp_path):
    rng = np.random.default_rng(0)
    write_features(tmp_path / "shard.jsonl", "image_id", np.arange(5), rng.normal(size=(5, 8)).astype(np.float32))
    results = run_both(warm_jobs, tmp_path, "gather-features", "shard.jsonl", "--id-key", "image_id")
    assert results["warm"] == results["cold"] and results["warm"][0] == 0 and results["warm"][1]
    missing = run_both(warm_jobs, tmp_path / "..", "gather-features", "missing.jsonl")
    assert missing["warm"] == missing["cold"] and missing["warm"][0] == 1 and missing["warm"][1] is None
    assert missing["warm"][2].startswith("clipeval: error: ") and len(missing["warm"][2].splitlines()) == 1
    log = (tmp_path / "logs/warm_jobs.log").read_text().splitlines()
    assert log == ["warm plain-1 gather-features"] * 2


@pytest.mark.slow
def test_decode_pixels_forks_under_any_threads_and_writes_the_bits_of_one_process(warm_jobs, tmp_path):
    from test_pixels import varied_images

    from clipeval.data.image_lmdb import write_image_store

    write_image_store(tmp_path / "images.lmdb", varied_images(37))
    pixels = {}
    for how, python, threads, workers in (
        ("one process", sys.executable, "1", 0),
        ("fork, 1 thread", warm_jobs.bin / "python", "1", 1),
        ("fork, 3 threads", warm_jobs.bin / "python", "3", 3),
    ):
        words = ["--images", "images.lmdb", "--recipe", "40x40-shortest-bicubic-fill0", "--num-workers", str(workers)]
        result = subprocess.run(
            [str(python), *clipeval_args("decode-pixels", *words, "--output", how)],
            cwd=tmp_path,
            env={**job_environment(warm_jobs.bin), **dict.fromkeys(THREAD_VARIABLES, threads)},
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, result.stderr
        pixels[how] = (tmp_path / how / "pixels.npy").read_bytes()
    assert pixels["fork, 1 thread"] == pixels["one process"] == pixels["fork, 3 threads"]
    assert (tmp_path / "logs/warm_jobs.log").read_text().splitlines() == ["warm torch-portable-1 decode-pixels"] * 2


def opened_by_a_reader(fifo, seconds=60):
    """The write end of `fifo`, once some process has opened it to read."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: no reader yet
            assert time.monotonic() < deadline, "the job never opened its input"
            time.sleep(0.05)


@pytest.mark.slow
def test_a_job_whose_python_is_killed_is_interrupted_in_its_fork(warm_jobs, tmp_path):
    fifo = tmp_path / "arguments.json"
    os.mkfifo(fifo)  # opening it to read waits for a writer: the job waits as long as the test wants
    log = tmp_path / "job.log"
    with open(log, "w") as stderr:
        job = subprocess.Popen(
            [str(warm_jobs.bin / "python"), *clipeval_args("gather-features", "--arguments-file", str(fifo))],
            cwd=tmp_path,
            env=job_environment(warm_jobs.bin),
            stderr=stderr,
        )
        writer = opened_by_a_reader(fifo)  # the fork runs the job: it opened the file, and now waits to read it
        job.kill()
        job.wait()
        deadline = time.monotonic() + 60
    while log.read_text() == "" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (tmp_path / "logs/warm_jobs.log").read_text() == "warm plain-1 gather-features\n"
    assert log.read_text() == "clipeval: gather-features interrupted (Ctrl-C); it left no output\n"
    os.close(writer)


@pytest.mark.slow
def test_an_interrupt_the_job_did_not_take_is_sent_again_and_none_after_it_took_one():
    """A SIGINT that lands between the interpreter's last look at its signals and a blocking read waits for a
    look that never comes: it failed the kill test above under load. Here the first one is lost on purpose."""
    script = (
        "import signal, socket, threading, time\n"
        "from clipeval.warm_jobs import server\n"
        "taken = threading.Event()\n"
        "server.take_interrupts(taken)\n"
        "take, lost = signal.getsignal(signal.SIGINT), []\n"
        "signal.signal(signal.SIGINT, lambda *signal_: lost.append(1) if not lost else take(*signal_))\n"
        "job, fork = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)\n"
        "threading.Thread(target=server.interrupt_when_the_job_ends, args=(fork, taken), daemon=True).start()\n"
        "job.close()\n"
        "try:\n"
        "    time.sleep(20)\n"
        "except KeyboardInterrupt:\n"
        "    time.sleep(3 * server.INTERRUPT_AGAIN_SECONDS)  # a job leaving no output: nothing interrupts it\n"
        "    print('interrupted once,', len(lost), 'lost')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": str(REPO / "workflow")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.stdout, result.stderr, result.returncode) == ("interrupted once, 1 lost\n", "", 0)


def test_a_servers_socket_appears_only_once_it_listens(tmp_path, monkeypatch):
    """The manager answers a job with a server's socket as soon as its path exists: a connection made between
    bind and listen is refused, and the job would start an interpreter of its own (it did under load)."""
    import socket

    from clipeval.warm_jobs.server import listening_socket

    path = tmp_path / "plain-1.sock"
    seen_at_listen = []
    listen = socket.socket.listen

    def listen_and_look(self, backlog):
        seen_at_listen.append(path.exists())
        return listen(self, backlog)

    monkeypatch.setattr(socket.socket, "listen", listen_and_look)
    with listening_socket(str(path)) as listener, socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as job:
        assert seen_at_listen == [False]
        job.connect(str(path))
        listener.accept()[0].close()
    assert sorted(tmp_path.iterdir()) == [path]


def test_a_killed_runs_folder_is_removed_by_the_next_run(tmp_path):
    import tempfile

    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tempfile.mkdtemp(prefix=f"clipeval-jobs-{int(ended.stdout)}-")
    alive = tempfile.mkdtemp(prefix=f"clipeval-jobs-{os.getpid()}-")
    jobs = WarmJobs("portable", tmp_path / "logs/warm_jobs.log")
    try:
        assert not os.path.exists(stale) and os.path.isdir(alive)
    finally:
        jobs.close()
        os.rmdir(alive)


@pytest.mark.slow  # a new interpreter imports everything a torch server preloads
def test_a_torch_servers_imports_leave_cuda_unstarted_for_its_forks():
    """CUDA does not survive a fork: no module a torch server loads may start it, or count the GPUs through the
    CUDA runtime (which starts the driver), as it loads."""
    script = (
        "import torch\n"
        "calls = []\n"
        "count = torch._C._cuda_getDeviceCount\n"
        "torch._C._cuda_getDeviceCount = lambda: calls.append(1) or count()\n"
        "from clipeval.warm_jobs.decide import PRELOAD\n"
        "from clipeval.warm_jobs.server import cuda_started, preload\n"
        "preload(PRELOAD['torch'])\n"
        "print(len(calls), cuda_started())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "workflow")},
    )
    assert result.stdout.split() == ["0", "False"], result.stderr[-2000:]


def test_without_a_writable_folder_every_job_starts_its_own_interpreter(tmp_path, monkeypatch):
    import tempfile

    from clipeval.warm_jobs.manager import started

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no such folder"))
    assert started("portable", tmp_path / "logs/warm_jobs.log") is None
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    (tmp_path / "logs").write_text("a file where the logs folder would be")
    assert started("portable", tmp_path / "logs/warm_jobs.log") is None
    assert not list(tmp_path.glob("clipeval-jobs-*"))  # the manager's folder is not left behind


def test_a_server_ends_without_tearing_its_modules_down(tmp_path):
    """A server that imported torch took 1.4 s to tear its modules down after its run's last job, which the run
    waited for: it ends at once instead. A module whose object's finalizer leaves a file shows whether the
    teardown ran: a plain interpreter's does (the witness works), the server's does not."""
    (tmp_path / "teardown_witness.py").write_text(
        "class Witness:\n"
        "    def __del__(self, open=open):  # builtins may be gone by then\n"
        "        open('torn-down', 'w').close()\n"
        "witness = Witness()\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO / "workflow")])}
    plain = subprocess.run([sys.executable, "-c", "import teardown_witness"], cwd=tmp_path, env=env, timeout=60)
    assert plain.returncode == 0 and (tmp_path / "torn-down").exists()
    (tmp_path / "torn-down").unlink()
    socket_path = tmp_path / "plain-1.sock"
    server = subprocess.Popen(
        [sys.executable, "-m", "clipeval.warm_jobs.server", str(socket_path), '["teardown_witness"]', "{}"],
        stdin=subprocess.PIPE,
        cwd=tmp_path,
        env=env,
    )
    deadline = time.monotonic() + 60
    while not socket_path.exists() and server.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    server.stdin.close()  # the run is over
    assert server.wait(timeout=60) == 0
    assert not (tmp_path / "torn-down").exists()
