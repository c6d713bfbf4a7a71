"""A command that hangs fails its test, with where its threads were, instead of holding the suite (conftest.run_cli):
the GPU tests run extraction through it."""

import os

import pytest
from conftest import run_cli


@pytest.mark.slow
def test_a_command_that_hangs_fails_its_test_and_shows_where_it_waited(tmp_path):
    fifo = tmp_path / "arguments.json"
    os.mkfifo(fifo)  # opening it to read waits for a writer that never comes
    with pytest.raises(pytest.fail.Exception) as failure:
        run_cli("gather-features", "--arguments-file", fifo, timeout=5)
    message = str(failure.value)
    assert message.startswith("clipeval gather-features still ran after 5 s; its threads:\n")
    assert "in expand_argument_files" in message  # where it waited: opening the file
