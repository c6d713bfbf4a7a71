"""The workflow runs a follow makes: the Snakemake command, its output kept in a log, and what a failed run's
output says in one line."""

import ctypes
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from clipeval.errors import ClipevalError
from clipeval.following import READY_KEY
from clipeval.storage.config_files import alias_error, duplicate_key_error, yte_error

# The workflow this package belongs to (a checkout's Snakefile).
SNAKEFILE = Path(__file__).resolve().parents[3] / "Snakefile"
# Snakemake's words when another run holds the folder's lock.
LOCKED = "Directory cannot be locked"
# prctl(PR_SET_PDEATHSIG): the signal Linux sends a child when its parent dies.
SET_PARENT_DEATH_SIGNAL = 1


def followed_series(config_path: Path) -> dict[str, str]:
    """{series: glob} of the config's models that name `checkpoints`, read as plain YAML after the checks that
    keep Snakemake from evaluating or expanding it."""
    import yaml

    message = yte_error(config_path) or alias_error(config_path)
    if message:
        raise ClipevalError(message)
    try:
        message = duplicate_key_error(config_path)
        config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise ClipevalError(f"{config_path}: cannot read the config ({type(error).__name__})") from None
    if message:
        raise ClipevalError(message)
    models = config.get("models") if isinstance(config, dict) else None
    series = {
        name: entry["checkpoints"]
        for name, entry in (models if isinstance(models, dict) else {}).items()
        if isinstance(entry, dict) and isinstance(entry.get("checkpoints"), str)
    }
    if not series:
        raise ClipevalError(
            f"{config_path}: no model names `checkpoints:` (a glob of a run's checkpoint files) to follow"
        )
    return series


def snakemake_command(config: Path, ready_list: Path, cores: str, profile: str | None) -> list[str]:
    """The run of the workflow on `config` with the series limited to the files `ready_list` names."""
    if not SNAKEFILE.is_file():
        raise ClipevalError(f"{SNAKEFILE}: not found; clipeval follow runs the workflow of a clipeval checkout")
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE), "--cores", cores]
    command += ["--configfile", str(config), "--config", f"{READY_KEY}={ready_list}", "--rerun-incomplete"]
    return command + (["--profile", profile] if profile else [])


def _stop_with_parent():
    """What the child runs before Snakemake: Linux interrupts it if the follow dies (Snakemake then stops and
    frees its lock), and it ends at once if the follow died already. prctl is looked up here, in the parent:
    a child forked beside other threads must not load libraries. None where there is no prctl (not Linux)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def in_child():
        prctl(SET_PARENT_DEATH_SIGNAL, signal.SIGINT)
        if os.getppid() != parent:
            os._exit(1)

    return in_child


def interrupt(process) -> None:
    """Ctrl-C as the terminal gives it: SIGINT to Snakemake and its local jobs (its own process group), once."""
    try:
        os.killpg(process.pid, signal.SIGINT)
    except ProcessLookupError:  # it has ended
        pass


def run_logged(command: list[str], log: Path, started) -> tuple[int, str]:
    """Run `command` with its output appended to `log`; `started(process)` is called once it runs. Returns
    the exit status and the run's output."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(f"$ {subprocess.list2cmdline(command)}\n")
        handle.flush()
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            # Its own process group and session: a Ctrl-C at the terminal reaches the follow alone, which
            # passes it on once (interrupt); a second SIGINT would cut Snakemake's clean-up short.
            start_new_session=True,
            preexec_fn=_stop_with_parent(),
        )
        started(process)
        output = []
        for line in process.stdout:
            handle.write(line)
            output.append(line)
        return process.wait(), "".join(output)


def names(line: str, name: str) -> bool:
    """Whether `line` names `name` whole: run.epoch_1 is not named by run.epoch_10."""
    return re.search(rf"(?<![\w/-]){re.escape(name)}(?![\w-]|\.\w)", line) is not None


def problem(status: int, output: str, log: Path, new_paths: list[str], new_models: list[str]) -> str | None:
    """None for a run that succeeded; else its failure in one line. A ClipevalError when the failure is not
    the new checkpoints' (another run holds the lock, or a config error names none of them): following cannot
    go on."""
    if status == 0:
        return None
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if any(LOCKED in line for line in lines):
        raise ClipevalError(
            "another Snakemake run holds this folder's lock (.snakemake/locks); once none runs, `snakemake"
            " --unlock` frees a lock a killed run left"
        )
    errors = [line for line in lines if line.startswith("config error: ")]
    if errors and not any(names(errors[0], name) for name in [*new_paths, *new_models]):
        raise ClipevalError(errors[0].removeprefix("config error: "))
    told = errors or [line for line in lines if line.startswith(("failed: ", "error: "))] or lines[-1:]
    return f"{told[0] if told else f'exit status {status}'}; the run's output: {log}"
