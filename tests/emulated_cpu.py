"""Run a command on another vendor's x86-64 CPU, emulated by QEMU's user mode.

Capping the instruction sets the libraries dispatch to imitates an older CPU
of the same vendor, but a library that picks its kernels by vendor or cache
sizes, or an instruction whose result is implementation-defined (the
approximate reciprocals), still behaves as on this machine. QEMU emulates a
whole CPU model instead: its vendor, family, cache descriptors and
instruction set, with every instruction computed in software. A result that
is the same natively and under QEMU does not depend on any of those.
"""

import os
import shutil
import subprocess

import pytest

# An AVX2 CPU of the other vendor than the host's.
OTHER_VENDOR_MODEL = {"AuthenticAMD": "Haswell-v4", "GenuineIntel": "EPYC-Rome"}


def host_vendor() -> str:
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("vendor_id"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def qemu_user() -> str:
    """The qemu-x86_64 binary, installed with apt-get when missing and allowed (CI runs as root)."""
    found = shutil.which("qemu-x86_64")
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("qemu-x86_64 is missing and installing it needs root and apt-get: apt-get install qemu-user")
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "--no-install-recommends", "qemu-user"]
    if subprocess.run(install, capture_output=True, env=environment).returncode != 0:
        subprocess.run(["apt-get", "update"], capture_output=True, env=environment, check=True)
        subprocess.run(install, capture_output=True, env=environment, check=True)
    return shutil.which("qemu-x86_64")


def other_vendor_cpu() -> tuple[str, str]:
    """(qemu binary, CPU model) for an emulated CPU of the other vendor; skips on a non-x86 host."""
    vendor = host_vendor()
    if vendor not in OTHER_VENDOR_MODEL:
        pytest.skip(f"emulating another vendor's x86-64 CPU needs an Intel or AMD host, not {vendor!r}")
    return qemu_user(), OTHER_VENDOR_MODEL[vendor]


def emulator_prefix(qemu: str, model: str) -> list[str]:
    """What to put before a command to run it on the emulated `model`.

    QEMU warns on stderr of the model's features it leaves out (none that torch uses).
    """
    return [qemu, "-cpu", model]
