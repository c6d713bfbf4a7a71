"""`make lint`'s checks, run by the suite: Snakemake's linter, ruff (lint and format) and snakefmt."""

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from snakemake_runner import snakemake

BIN = Path(sys.executable).parent


def run(*command):
    return subprocess.run([str(BIN / command[0]), *command[1:]], cwd=REPO, capture_output=True, text=True)


@pytest.mark.slow
def test_snakemake_lint_is_clean():
    result = snakemake(REPO, "--lint")
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "Congratulations, your workflow is in a good condition!" in output, output


def test_ruff_finds_nothing():
    result = run("ruff", "check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_leaves_every_file_as_it_is():
    result = run("ruff", "format", "--check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_snakefmt_leaves_every_rule_file_as_it_is():
    result = run("snakefmt", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr
