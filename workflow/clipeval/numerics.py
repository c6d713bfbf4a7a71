"""Pin the numerical code path of torch's CPU libraries, so results do not depend on threads, load or dispatch.

Which kernels torch runs on a CPU is decided at run time: ATen picks a vector
width (default, AVX2, AVX-512), oneDNN JIT-compiles convolutions for the best
instruction set, MKL dispatches its matrix products by CPU, and every one of
them splits work by thread count. Each choice rounds differently, and a
training run amplifies the last-bit differences into other numbers. The
"portable" profile pins each of these choices: the same bits whatever the
machine's cores and load, and on the other vendor's CPU as emulated in the
tests. One thing no pin reaches, the float32 square root, training takes
elsewhere (models/optimizer.py). docs/REPRODUCIBILITY.md has the evidence.

The settings are read when the libraries load, so `pin` must run before torch
is imported: each command that computes with torch calls it first thing.
"""

import os
import sys

from clipeval.errors import ClipevalError

PROFILES = ("portable", "native")

# The code paths the portable profile forces: ATen's and oneDNN's AVX2 kernels,
# which every x86-64 CPU with AVX2 runs alike, MKL's COMPATIBLE branch, which
# Intel documents to give the same results on Intel and non-Intel CPUs, and no
# run-time adjustment of thread counts under load.
PORTABLE_ENVIRONMENT = {
    "MKL_CBWR": "COMPATIBLE",
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "MKL_DYNAMIC": "FALSE",
    "OMP_DYNAMIC": "FALSE",
}
PORTABLE_CAPABILITY = "AVX2"
# How OpenMP threads wait for work, under either profile unless the caller
# sets it: by sleeping. Spinning (OpenMP's default, for a while) takes the
# cores that another job on a shared machine computes with, and slows both
# far beyond their share (benchmarks/shared_machine.py). It decides when a
# thread computes, never what.
WAIT_POLICY = ("OMP_WAIT_POLICY", "PASSIVE")
# Reductions split by thread count, so the portable profile computes with this
# many threads whatever the machine or the scheduler offers.
PORTABLE_THREADS = 2


def add_options(parser) -> None:
    """--numerics and --threads, for the commands that compute with torch."""
    parser.add_argument(
        "--numerics",
        choices=PROFILES,
        default="portable",
        help="portable (default): the same bits on every x86-64 CPU with AVX2; native: the CPU's fastest code path",
    )
    parser.add_argument("--threads", type=int, default=None, help="torch threads under --numerics native")


def pins_training(numerics: str, precision: str, device: str) -> bool:
    """Whether a training's numbers are held to the profile: half precision on the CPU computes with kernels the
    portable profile does not pin (a GPU's are held to the GPU tolerance instead)."""
    return not (numerics == "portable" and precision != "fp32" and device == "cpu")


class NumericsError(ClipevalError):
    """The portable code path cannot be taken here."""


def pin(profile: str, threads: int | None = None) -> int:
    """Fix the code path for `profile` and return the thread count computations will use.

    native keeps the libraries' own choices and uses `threads` (or torch's
    default): fastest, reproducible only on the same CPU with the same count.
    portable computes with PORTABLE_THREADS threads, and refuses a job given
    fewer (`threads`): more threads than its cores would slow it and the
    jobs beside it, and fewer would change its numbers.
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown numerics profile {profile!r} (choose from {', '.join(PROFILES)})")
    os.environ.setdefault(*WAIT_POLICY)
    if profile == "portable":
        if threads is not None and threads < PORTABLE_THREADS:
            raise NumericsError(portable_threads_error(f"this job was given {threads}"))
        _check_environment()
        if "torch" in sys.modules and not portable_pinned():
            raise NumericsError("torch was imported before the portable code path could be pinned")
        os.environ.update(PORTABLE_ENVIRONMENT)
        threads = PORTABLE_THREADS
    import torch

    if profile == "portable" and torch.backends.cpu.get_cpu_capability() != PORTABLE_CAPABILITY:
        raise NumericsError(
            f"this CPU runs torch's {torch.backends.cpu.get_cpu_capability()} kernels, not"
            f" {PORTABLE_CAPABILITY}: the portable numerics profile needs an x86-64 CPU with AVX2"
            " (set numerics: native to run here, with numbers that differ from other machines)"
        )

    if threads:
        torch.set_num_threads(threads)
    # On CUDA, deterministic kernels and no TF32 rounding of fp32 work.
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch.get_num_threads()


def portable_pinned() -> bool:
    """Whether this process computes on the portable code path."""
    return all(os.environ.get(key) == value for key, value in PORTABLE_ENVIRONMENT.items())


def portable_threads_error(given: str) -> str:
    return (
        f"numerics: portable computes each torch job with {PORTABLE_THREADS} threads (its numbers depend on the"
        f" count), and {given}: run Snakemake with --cores {PORTABLE_THREADS} or more, or set numerics: native"
        " (then numbers depend on the machine and the thread count)"
    )


def _check_environment() -> None:
    """A caller's own setting of a pinned variable would silently change the code path: refuse it."""
    for key, value in PORTABLE_ENVIRONMENT.items():
        given = os.environ.get(key)
        if given is not None and given.upper() != value.upper():
            raise NumericsError(
                f"the environment sets {key}={given}, but the portable numerics profile needs"
                f" {key}={value}: unset it, or set numerics: native"
            )


def code_path() -> dict:
    """What the libraries actually run, for provenance."""
    import torch

    return {
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(),
        **{key: os.environ.get(key) for key in PORTABLE_ENVIRONMENT},
    }
