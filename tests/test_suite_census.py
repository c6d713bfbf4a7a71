import os
import subprocess
import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
from suite_census import HOOK  # noqa: E402


def test_the_census_hook_records_the_process_and_still_runs_the_sitecustomize_it_hides(tmp_path):
    hook, other = tmp_path / "hook", tmp_path / "other"
    hook.mkdir()
    other.mkdir()
    (hook / "sitecustomize.py").write_text(HOOK)
    marker = tmp_path / "other-ran"
    (other / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').write('yes')\n")
    log = tmp_path / "census.tsv"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(hook), str(other)]),
        "CLIPEVAL_CENSUS_LOG": str(log),
        "PYTEST_CURRENT_TEST": "tests/test_x.py::test_y (call)",
    }
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
    assert marker.read_text() == "yes"
    seconds, arguments, test = log.read_text().rstrip("\n").split("\t")
    assert float(seconds) > 0 and arguments == "-c" and test == "tests/test_x.py::test_y (call)"
