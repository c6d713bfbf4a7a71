"""Jobs' OpenMP threads wait for work by sleeping, unless the caller says otherwise (numerics.WAIT_POLICY)."""

import os
import subprocess
import sys

import pytest

# The policy as the process sees it when torch, and with it the OpenMP runtime, loads.
PROBE = """
import os, sys
from clipeval import numerics
real_import = __import__
def watching(name, *args, **kwargs):
    if name == "torch" and "torch" not in sys.modules:
        print(os.environ.get("OMP_WAIT_POLICY"))
    return real_import(name, *args, **kwargs)
__builtins__.__import__ = watching
numerics.pin("native", 1)
"""


@pytest.mark.slow  # a new interpreter imports torch each time
@pytest.mark.parametrize("given, seen", [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_pin_makes_openmp_threads_sleep_unless_the_caller_sets_a_policy(given, seen):
    env = {key: value for key, value in os.environ.items() if key != "OMP_WAIT_POLICY"}
    if given:
        env["OMP_WAIT_POLICY"] = given
    result = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [seen]
