"""The task registry (workflow/clipeval/tasks/): every task is one record, each record agrees with the schema,
the commands and the workflow's rules, and a new task is a module there plus its package's code, which the
comparisons, the summary and the report's tables then take up without a line of theirs changed."""

import json
import shutil
import subprocess
import sys
import textwrap

import pytest
import yaml
from conftest import REPO

from clipeval.cli import build_parser, command_names
from clipeval.planning.artifacts import EXPERIMENT_OUTPUTS
from clipeval.planning.config_errors import fill_defaults
from clipeval.planning.plan import Plan, fill_metric_defaults
from clipeval.reporting import headlines
from clipeval.tasks import TASKS, Task

# Dataset tasks that are read, not scored: a model's training set and a probe's train split.
READ_ONLY_TASKS = {"train", "probe_train"}


def schema_tasks(node) -> set[str]:
    """Every value config/schema.yaml lets a dataset's `task` take."""
    found = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "task" and isinstance(value, dict):
                found.update(value.get("enum", ()))
                found.update([value["const"]] if "const" in value else [])
            found |= schema_tasks(value)
    elif isinstance(node, list):
        for value in node:
            found |= schema_tasks(value)
    return found


def test_the_schema_s_scored_tasks_are_the_registry_s():
    schema = yaml.safe_load((REPO / "config/schema.yaml").read_text())
    assert schema_tasks(schema) - READ_ONLY_TASKS == set(TASKS)


def plan_of_every_task() -> Plan:
    """The default config with a shapes dataset of every task, a fitted one's fitted on shapes-classes."""
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    for name in TASKS:
        entry = {"format": "shapes", "task": name, "num_images": 8, "seed": 3}
        config["datasets"][f"shapes-{name}"] = {
            **entry,
            **({"train_split": "shapes-classes"} if TASKS[name].fitted else {}),
        }
    fill_defaults(config, yaml.safe_load((REPO / "config/schema.yaml").read_text()))
    fill_metric_defaults(config)
    return Plan(config, ["config/config.yaml"])


def test_every_task_is_scored_by_a_command_that_takes_the_files_and_settings_its_record_names():
    plan = plan_of_every_task()
    outputs = ["--config", "c.json", "--ranks-output", "r.json", "--output", "s.json"]
    for task in TASKS.values():
        assert task.score_command in command_names(), task.name
        dataset = f"shapes-{task.name}"
        inputs = plan.score_inputs("tiny-shapes", dataset)
        argv = [task.score_command, *(word for name in inputs for word in (f"--{name.replace('_', '-')}", name))]
        args = build_parser(argv).parse_args([*argv, *plan.score_options(dataset), *outputs])
        assert {name: str(getattr(args, name)) for name in inputs} == {name: name for name in inputs}, task.name
        assert not task.headline_block or callable(getattr(headlines, task.headline_block)), task.name
        pairing = __import__(task.pairing, fromlist=["stacked_samples"])
        assert callable(pairing.check_pairable) and callable(pairing.stacked_samples), task.name
        assert task.main_metric in {metric.column for metric in task.metrics_of({})}, task.name


def test_every_report_job_draws_its_figures_by_a_command_that_takes_the_files_and_options_its_record_names():
    plan = plan_of_every_task()
    rules = [job.rule for task in TASKS.values() for job in task.report_jobs]
    assert len(set(rules)) == len(rules)
    for task in TASKS.values():
        dataset = f"shapes-{task.name}"
        for job in task.report_jobs:
            assert job.command in command_names(), job.rule
            for name in [*job.figures, *job.data]:
                assert name in EXPERIMENT_OUTPUTS, name
            for name in job.figures:
                assert (REPO / f"workflow/report/{name}.rst").is_file(), name
            if job.per_model:
                files = plan.task_files("tiny-shapes", dataset, job.inputs)
                assert all(path.startswith("results/") for path in files.values()), job.rule
                arguments = [*(word for name in files for word in (f"--{name.replace('_', '-')}", name))]
                arguments += ["--title", "t", *plan.report_options(job)]
            else:
                assert job.entries in ("scores", "ranks") and not job.inputs, job.rule
                # the arguments file of --entry MODEL FILE (cli.py reads it in before parsing)
                files, arguments = {}, ["--dataset", dataset, "--entry", "tiny-shapes", "e.json"]
            figures = [word for name, (option, _) in job.figures.items() for word in (option, f"{name}.png")]
            args = build_parser([job.command]).parse_args([job.command, *arguments, *figures])
            assert {name: str(getattr(args, name)) for name in files} == {name: name for name in files}, job.rule
            given = {str(value) for value in vars(args).values()}
            assert {f"{name}.png" for name in job.figures} <= given, job.rule


def test_the_tasks_come_in_the_order_of_their_sections():
    assert list(TASKS) == ["retrieval", "classification", "compositionality", "probe"]
    assert all(isinstance(task, Task) for task in TASKS.values())


# A task of its own: each image's count of objects is right or wrong; its score is the percent right.
COUNTING_RECORD = """
from clipeval.metric_catalog import Metric
from clipeval.tasks import Task

TASK = Task(
    name="counting",
    order=4,
    title="Counting",
    table_title="Object counting",
    main_metric="count_accuracy",
    main_metric_label="count accuracy",
    metrics=(Metric("count_accuracy", "count accuracy"),),
    counts=("classes",),
    record_keys=("image_ids", "right"),
    score_command="score-counting",
    score_inputs={"image_feats": "features/images", "labels": "dataset_labels"},
    pairing="clipeval.counting.pairing",
)
"""
COUNTING_PAIRING = """
import numpy as np

from clipeval.statistics.pairing import require_same


def check_pairable(first, second, second_path):
    require_same(first, second, second_path, ("image_ids",), "images")


def stacked_samples(records):
    rows = np.column_stack([record["right"] for record in records]).astype(np.int64)

    def statistic_of(model):
        return lambda samples: {"count_accuracy": 100.0 * float(samples["images"][0][:, model].mean())}

    return {"images": [rows]}, [statistic_of(model) for model in range(len(records))]
"""
CHECKS = """
import json, sys
from pathlib import Path

from clipeval.comparison import compare_all
from clipeval.planning.codegraph import CodeGraph, command_entry_modules
from clipeval.planning.plan import Plan
from clipeval.reporting.summary import columns_for, render_markdown, summary_row
from clipeval.reporting.tables import results_page
from clipeval.tasks import TASKS, main_metric

folder = Path(sys.argv[1])
metrics = {"task": "counting", "count_accuracy": 75.0, "counts": {"images": 4, "classes": 3}}
(folder / "score.json").write_text(json.dumps(metrics))
row = summary_row("tiny", "jars", metrics)
comparison = compare_all(["a", "b"], [folder / "a.json", folder / "b.json"], replicates=20, seed=0)[0]
config = {
    "datasets": {"jars": {"format": "shapes", "task": "counting", "num_images": 4, "seed": 0}},
    "models": {"tiny": {"arch": "clipeval-tiny", "pretrained": "tiny.pt"}},
    "numerics": "portable", "extract": {"precision": "fp32"}, "knn": {"top_k": 10},
    "metrics": {"bootstrap": 20, "bootstrap_seed": 0},
}
plan = Plan(config, ["config/jars.yaml"])
graph = CodeGraph(Path(sys.argv[2]))
closure = graph.closure(command_entry_modules("compare-models"))
print(json.dumps({
    "tasks": list(TASKS),
    "headline": main_metric("counting", metrics),
    "row": row,
    "columns": columns_for([row]),
    "markdown": render_markdown([row], [], []),
    "difference": comparison["difference"],
    "interval": comparison["intervals"]["count_accuracy"],
    "page_has_table": "Object counting" in results_page("e", [("tiny", "jars", str(folder / "score.json"))]),
    "compare_runs_pairing": {"clipeval.counting", "clipeval.counting.pairing", "clipeval.tasks.counting"} <= set(closure),
    "summary_skips_pairing": "clipeval.counting.pairing" not in graph.closure(command_entry_modules("summarize")),
    "score_inputs": list(plan.score_inputs("tiny", "jars")),
    "score_options": plan.score_options("jars"),
    "evaluated": plan.evaluated_datasets("counting"),
}))
"""


@pytest.mark.slow  # a new process
def test_a_new_task_is_one_record_and_its_own_code(tmp_path):
    package = tmp_path / "workflow/clipeval"
    shutil.copytree(REPO / "workflow/clipeval", package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "tasks/counting.py").write_text(COUNTING_RECORD)
    (package / "counting").mkdir()
    (package / "counting/__init__.py").write_text('"""Object counting."""\n')
    (package / "counting/pairing.py").write_text(COUNTING_PAIRING)
    for name, right in (("a", [1, 1, 1, 0]), ("b", [1, 0, 0, 0])):
        (tmp_path / f"{name}.json").write_text(
            json.dumps({"task": "counting", "image_ids": [1, 2, 3, 4], "right": right})
        )
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHECKS), str(tmp_path), str(package)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path / "workflow"), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout)
    assert found["tasks"] == ["retrieval", "classification", "compositionality", "probe", "counting"]
    assert found["headline"] == "count_accuracy"
    assert found["row"] == {
        "model": "tiny",
        "dataset": "jars",
        "task": "counting",
        "count_accuracy": 75.0,
        "images": 4,
        "classes": 3,
    }
    assert found["columns"][-5:] == ["count_accuracy", "protocol", "images", "texts", "classes"]
    assert "### Counting\n\n| model | dataset | task | count_accuracy | images | classes |" in found["markdown"]
    assert found["difference"] == {"count_accuracy": 50.0}
    low, high = found["interval"]  # seeded: the same draws on every machine
    assert 0.0 <= low <= 50.0 <= high <= 100.0
    assert found["page_has_table"] is True
    assert found["compare_runs_pairing"] is True
    assert found["summary_skips_pairing"] is True
    assert found["score_inputs"] == ["image_feats", "labels", "dataset_meta", "model_meta"]
    assert found["score_options"] == ["--bootstrap", "20", "--seed", "0"]
    assert found["evaluated"] == ["jars"]
