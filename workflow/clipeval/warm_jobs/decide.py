"""Which server may run a job, from its arguments and environment: pure functions, no processes."""

import os
from dataclasses import dataclass

from clipeval.cli import command_module, command_names
from clipeval.numerics import PORTABLE_ENVIRONMENT, PROFILES, WAIT_POLICY

# What Snakemake sets for a job, to its thread count; the libraries read them as they load.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS", "GOTO_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS", "OPENBLAS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)  # fmt: skip
# Commands whose libraries compute nothing in their own threads, so that a server of any thread count may fork
# them: decode-pixels decodes in loader processes of its own, one per thread the job is given.
ANY_THREADS = frozenset({"decode-pixels"})

# Variables that may differ between a job and the server that forks it: the fork adopts them, and nothing reads
# them when a library loads (tempfile looks its folder up again in the fork). PS1 and PS2: a non-interactive bash,
# which runs each shell job, unsets the prompts an activated virtual environment exports.
ADOPTED = frozenset(
    ("PATH", "PWD", "OLDPWD", "SHLVL", "_", "PS1", "PS2", "TMPDIR", "TEMP", "TMP", "TEMPDIR", "SNAKEMAKE_OUTPUT_CACHE")
)
# What each kind of server imports before it forks, where installed.
PRELOAD = {
    "torch": ("numpy", "PIL.Image", "lmdb", "jsonlines", "torch", "torchvision", "open_clip"),
    "plain": ("numpy", "PIL.Image", "lmdb", "jsonlines", "yaml", "faiss", "matplotlib.pyplot", "pandas"),
}


@dataclass(frozen=True)
class ServerKey:
    """What a server's processes have loaded, and how: a job forks only from a server of its own key, or of any
    thread count where its threads are None."""

    kind: str  # torch or plain
    profile: str | None  # the numerics profile torch loaded under; None for plain
    threads: str | None  # the job's OMP_NUM_THREADS, which the libraries read as they load; None: any

    @property
    def name(self) -> str:
        return "-".join(part for part in (self.kind, self.profile, self.threads) if part)


def option_value(args: list[str], option: str) -> str | None:
    """The value of `--option VALUE` or `--option=VALUE` among args, the last one given; None without it."""
    value = None
    for index, arg in enumerate(args):
        if arg == option and index + 1 < len(args):
            value = args[index + 1]
        elif arg.startswith(f"{option}="):
            value = arg.split("=", 1)[1]
    return value


def server_key(args: list[str], env: dict, run_profile: str) -> tuple[ServerKey | None, str]:
    """The key of the server that may run `python ARGS` in `env`, or (None, why it runs in a new interpreter).
    `run_profile` is the run's numerics profile, for torch commands that take none (they compute nothing)."""
    if args[:2] != ["-m", "clipeval"] or len(args) < 3 or args[2] not in command_names():
        return None, "not a clipeval command"
    module = command_module(args[2])
    if not getattr(module, "WARM_START", True):
        return None, "sets what its libraries read as they load"
    threads = None if args[2] in ANY_THREADS else env.get("OMP_NUM_THREADS", "")
    if "torch" not in module.LIBRARIES:
        return ServerKey("plain", None, threads), ""
    profile = option_value(args, "--numerics") or run_profile
    if profile not in PROFILES:
        return None, f"numerics {profile!r}"
    if profile == "portable":
        clashing = [key for key, value in PORTABLE_ENVIRONMENT.items() if env.get(key, value).upper() != value.upper()]
        if clashing:
            return None, f"sets {', '.join(clashing)}"
    return ServerKey("torch", profile, threads), ""


def server_environment(key: ServerKey, env: dict) -> dict:
    """The environment a server of `key` loads its libraries under, made from its first job's: what a job of
    that key sets before importing torch (numerics.pin) is set before the server does."""
    if key.kind != "torch":
        return dict(env)
    pinned = PORTABLE_ENVIRONMENT if key.profile == "portable" else {}
    return {WAIT_POLICY[0]: WAIT_POLICY[1], **env, **pinned}


def differing_variables(env: dict, first_env: dict, any_threads: bool = False) -> list[str]:
    """The variables a job sets otherwise than the first job of its server, whose environment the server loaded
    its libraries under (ADOPTED aside, and the thread counts for a job of any_threads)."""
    keys = (set(env) | set(first_env)) - ADOPTED - (set(THREAD_VARIABLES) if any_threads else set())
    return sorted(key for key in keys if env.get(key) != first_env.get(key))


def wanted(local_cores, deployment_methods, environ=os.environ) -> str:
    """'' where a run starts warm jobs, else why not: a cluster executor's jobs run elsewhere, conda's or a
    container's `python` is not this one, and CLIPEVAL_WARM_JOBS=0 asks for new interpreters."""
    if environ.get("CLIPEVAL_WARM_JOBS") == "0":
        return "CLIPEVAL_WARM_JOBS=0"
    if local_cores is None:
        return "jobs run on a cluster"
    if deployment_methods:
        return "jobs run in their own software environment"
    return ""
