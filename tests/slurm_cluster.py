"""A real single-node SLURM cluster on this machine, for the cluster profile's test.

Debian's slurm-wlm and munge, installed with apt-get when missing (CI runs as
root on a fresh machine). The node offers one GPU as a GRES backed by
/dev/null, so jobs that request a GPU schedule; torch there sees no CUDA
device and computes on the CPU. No accounting database: job states come from
squeue, and finished jobs stay visible to `scontrol show job` for an hour.
"""

import os
import shutil
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

CONFIG_DIR = Path("/etc/slurm")
# Written into the files this module creates, so it never replaces a real
# cluster's configuration and removes only its own.
MARKER = "# written by clipeval's tests/slurm_cluster.py"
PACKAGES = ("slurm-wlm", "munge")
NAMED_PARTITION = "gpu"


def _install_packages():
    if shutil.which("slurmctld") and shutil.which("munged"):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("SLURM is missing and installing it needs root and apt-get: apt-get install slurm-wlm munge")
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "--no-install-recommends", *PACKAGES]
    if subprocess.run(install, capture_output=True, env=environment).returncode != 0:
        subprocess.run(["apt-get", "update"], capture_output=True, env=environment, check=True)
        subprocess.run(install, capture_output=True, env=environment, check=True)


def _memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024 - 512
    raise RuntimeError("no MemTotal in /proc/meminfo")


def slurm_conf(node: str, state_dir: Path) -> str:
    return "\n".join(
        [
            MARKER,
            "ClusterName=clipeval-test",
            f"SlurmctldHost={node}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "GresTypes=gpu",
            "MpiDefault=none",
            "ReturnToService=2",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/none",
            "MinJobAge=3600",
            f"StateSaveLocation={state_dir / 'state'}",
            f"SlurmdSpoolDir={state_dir / 'spool'}",
            f"SlurmctldPidFile={state_dir / 'slurmctld.pid'}",
            f"SlurmdPidFile={state_dir / 'slurmd.pid'}",
            f"SlurmctldLogFile={state_dir / 'slurmctld.log'}",
            f"SlurmdLogFile={state_dir / 'slurmd.log'}",
            f"NodeName={node} CPUs={os.cpu_count()} RealMemory={_memory_mb()} Gres=gpu:1 State=UNKNOWN",
            f"PartitionName=test Nodes={node} Default=YES MaxTime=INFINITE State=UP",
            # Not the default: jobs land here only when the user names it.
            f"PartitionName={NAMED_PARTITION} Nodes={node} Default=NO MaxTime=INFINITE State=UP",
            "",
        ]
    )


def _write_config(node: str, state_dir: Path) -> list[Path]:
    files = {
        CONFIG_DIR / "slurm.conf": slurm_conf(node, state_dir),
        CONFIG_DIR / "gres.conf": f"{MARKER}\nNodeName={node} Name=gpu File=/dev/null\n",
    }
    for path in files:
        if path.exists() and MARKER not in path.read_text():
            pytest.skip(f"{path} belongs to a SLURM installation of this machine; the test will not replace it")
    CONFIG_DIR.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        path.write_text(text)
    return list(files)


def _start_munge() -> bool:
    """Start munged unless it runs; True if this call started it."""
    if subprocess.run(["pgrep", "-x", "munged"], capture_output=True).returncode == 0:
        return False
    run_dir = Path("/run/munge")
    run_dir.mkdir(parents=True, exist_ok=True)
    shutil.chown(run_dir, "munge", "munge")
    if not Path("/etc/munge/munge.key").exists():
        subprocess.run(["mungekey", "--create"], check=True, capture_output=True)
        shutil.chown("/etc/munge/munge.key", "munge", "munge")
    subprocess.run(["runuser", "-u", "munge", "--", "munged"], check=True, capture_output=True)
    return True


def _wait_for_idle_node(state_dir: Path, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        state = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True).stdout.strip()
        if state == "idle":
            return
        time.sleep(0.5)
    logs = "".join(
        (state_dir / name).read_text()[-2000:]
        for name in ("slurmctld.log", "slurmd.log")
        if (state_dir / name).exists()
    )
    raise RuntimeError(f"the SLURM node did not become idle (sinfo: {state!r})\n{logs}")


@contextmanager
def running_cluster(state_dir: Path):
    """Install, configure and start a one-node cluster; stop it and remove its configuration afterwards."""
    _install_packages()
    if os.geteuid() != 0:
        pytest.skip("starting SLURM's daemons needs root")
    if subprocess.run(["pgrep", "-x", "slurmctld"], capture_output=True).returncode == 0:
        pytest.skip("a slurmctld already runs on this machine; the test will not start a second cluster")
    node = socket.gethostname().split(".")[0]
    for sub in ("state", "spool"):
        (state_dir / sub).mkdir(parents=True, exist_ok=True)
    written = _write_config(node, state_dir)
    started_munge = _start_munge()
    try:
        subprocess.run(["slurmctld"], check=True, capture_output=True)
        subprocess.run(["slurmd"], check=True, capture_output=True)
        _wait_for_idle_node(state_dir)
        yield node
    finally:
        subprocess.run(["scontrol", "shutdown"], capture_output=True)
        for pid_file in ("slurmctld.pid", "slurmd.pid"):
            _wait_for_exit(state_dir / pid_file)
        for path in written:
            path.unlink(missing_ok=True)
        if started_munge:
            subprocess.run(["pkill", "-x", "munged"], capture_output=True)


def _wait_for_exit(pid_file: Path, seconds=30):
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text().split()[0])
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.kill(pid, 9)


def job_record(job_id: str) -> dict:
    """`scontrol show job`'s fields for one job, as {key: value}."""
    text = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, check=True).stdout
    return dict(field.split("=", 1) for field in text.split() if "=" in field)


def jobs_in_queue() -> list[dict]:
    """Jobs squeue lists: id, state and the comment the executor plugin sets (rule and wildcards)."""
    text = subprocess.run(["squeue", "-h", "-o", "%i|%T|%k"], capture_output=True, text=True, check=True).stdout
    return [dict(zip(("id", "state", "comment"), line.split("|", 2))) for line in text.splitlines() if line]
