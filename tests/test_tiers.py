"""The suite's tiers and order come from marks in the test files: a test that runs Snakemake fails unless it
or its file is marked workflow or slow (conftest.require_slow_tier), and the files marked longest start first."""

from types import SimpleNamespace

import pytest
from conftest import pytest_collection_modifyitems, tier_error
from snakemake_runner import snakemake


def test_a_fast_test_that_runs_snakemake_fails_saying_how_to_mark_it(tmp_path):
    with pytest.raises(pytest.fail.Exception) as failure:
        snakemake(tmp_path, "--version")
    assert str(failure.value) == (
        "tests/test_tiers.py::test_a_fast_test_that_runs_snakemake_fails_saying_how_to_mark_it runs Snakemake,"
        " which `make test-fast` must not: mark it (pytestmark = pytest.mark.workflow)"
    )


@pytest.mark.parametrize("marks", [{"workflow"}, {"slow"}, {"minutes", "workflow"}])
def test_a_test_of_a_slow_tier_may_run_snakemake(marks):
    assert tier_error("tests/test_x.py::test_y", marks, "runs Snakemake") is None


def test_files_marked_longest_go_first_and_keep_their_tests_together():
    def item(path, minutes=None):
        mark = SimpleNamespace(args=(minutes,)) if minutes is not None else None
        return SimpleNamespace(path=path, name=f"{path}:{minutes}", get_closest_marker=lambda name: mark)

    items = [item("a"), item("b", 3), item("b"), item("c", 9), item("d"), item("e", 3)]
    pytest_collection_modifyitems(items)
    assert [each.name for each in items] == ["c:9", "b:3", "b:None", "e:3", "a:None", "d:None"]
