"""The default experiment's report as a reader opens it: `snakemake --report`'s one HTML file in a real browser.
A file of its own, so that it runs beside tests/test_workflow.py's checks of the same run once the run is built
(tests/conftest.py's `default_experiment`), not after them."""

import pytest
from snakemake_runner import read_summary, snakemake
from test_workflow_reruns import copy_of_run

# The minute of its own tests: it waits on the default experiment like test_workflow_reruns.py.
pytestmark = [pytest.mark.workflow, pytest.mark.minutes(1)]


def test_the_report_opens_in_a_real_browser(default_experiment, tmp_path):
    """snakemake --report builds one HTML file; chromium loads it without errors and renders every figure.
    It reports on a copy of the run, which tests/test_workflow.py runs Snakemake in meanwhile."""
    from browser import visit_report

    default_run = copy_of_run(default_experiment.workdir, tmp_path / "run")
    report, screenshot = tmp_path / "report.html", tmp_path / "report-screenshot.png"
    result = snakemake(default_run, "--report", report)
    assert result.returncode == 0, result.stderr[-3000:]
    visit = visit_report(report, screenshot, "shapes-test", "tiny-shapes", "Results", "tables")
    errors, fetched, decoded, width, table = visit
    assert errors == []
    assert fetched == []  # self-contained: the page asked for nothing beyond its own file
    figures = {path.split("report/", 1)[1] for path in decoded}
    assert figures == {
        "shapes-test/recall-curves.png",
        "shapes-test/rank-distribution.png",
        "shapes-test/tiny-shapes/failures-t2i.png",
        "shapes-test/tiny-shapes/failures-i2t.png",
        "shapes-classes/class-recall.png",
        "shapes-classes/tiny-shapes/confusion.png",
        "shapes-classes/tiny-shapes/confused-pairs.png",
    }
    assert all(width > 300 for width in decoded.values()), decoded
    assert width == decoded["results/experiments/default/report/shapes-test/tiny-shapes/failures-i2t.png"]
    row = read_summary(default_run)[0]
    assert (
        f"{float(row['t2i_R@1']):.2f} [{float(row['t2i_R@1_ci_low']):.2f}, {float(row['t2i_R@1_ci_high']):.2f}]"
        in table
    )
    assert screenshot.stat().st_size > 10_000
