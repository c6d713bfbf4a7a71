"""The workflow's checks and choices through the real Snakemake, each on a fresh copy of the repository:
config errors and refusals before any job, the pairs a config evaluates, `make`'s own checks. None needs a
finished run, so they run beside tests/test_workflow.py's default experiment rather than after it."""

import json
import os
import re
import shutil
import subprocess

import pytest
import yaml
from conftest import REPO
from snakemake_runner import (
    EXTRACTION,
    JOB_CORES,
    REPORT,
    config_error_line,
    copy_workflow,
    edit_config,
    job_counts,
    planned_jobs,
    shared_path,
    snakemake,
)
from sources import write_karpathy

pytestmark = [pytest.mark.workflow, pytest.mark.minutes(2)]


def test_a_local_run_with_fewer_cores_than_portable_numerics_threads_is_refused_before_its_first_job(tmp_path):
    workdir = copy_workflow(tmp_path)
    result = snakemake(workdir, "--cores", "1")
    output = result.stdout + result.stderr
    assert result.returncode == 1 and job_counts(output) == {}, output[-3000:]
    assert output.splitlines()[-1] == (
        "config error: numerics: portable computes each torch job with 2 threads (its numbers depend on the"
        " count), and --cores 1 grants 1: run Snakemake with --cores 2 or more, or set numerics: native (then"
        " numbers depend on the machine and the thread count)"
    )
    assert not (workdir / "results").exists()
    edit_config(workdir, lambda config: config.update(numerics="native"))
    result = snakemake(workdir, "--cores", "1", shared_path(workdir, "dataset_meta", dataset="shapes-test"))
    assert result.returncode == 0 and job_counts(result.stdout + result.stderr) == {"prepare_shapes": 1}


def test_make_refuses_an_unknown_faiss_build_before_installing_anything():
    # As a user types it: not as a sub-make of `make test`, which would announce its directory.
    environment = {key: value for key, value in os.environ.items() if key not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    result = subprocess.run(
        ["make", "--dry-run", "run", "FAISS=cuda"], cwd=REPO, capture_output=True, text=True, env=environment
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == "Makefile:11: *** FAISS must be cpu or gpu, not 'cuda'.  Stop.\n"


def test_make_run_takes_another_experiments_config():
    environment = {key: value for key, value in os.environ.items() if key not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    result = subprocess.run(
        ["make", "--dry-run", "run", "CONFIG=config/examples/muge.yaml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=environment,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == (
        ".venv/bin/python -c 'import sys; from clipeval.storage.config_files import refuse_before_loading; refuse_before_loading(sys.argv[1])'"
        f' config/examples/muge.yaml && PATH="{REPO}/.venv/bin:$PATH" .venv/bin/snakemake --cores all'
        " --configfile config/examples/muge.yaml"
    )


# A config whose ?-expression leaves a file behind when Snakemake evaluates it.
YTE_CONFIG = """__use_yte__: true
experiment: ?str(__import__("pathlib").Path("evaluated").write_text("the config's Python ran"))
"""


# Aliases Snakemake's config merge copies without end, or into 10^9 values.
LOOPING_CONFIG = "experiment: x\nmodels: &models\n  tiny: {arch: clipeval-tiny, again: *models}\n"
EXPLODING_CONFIG = "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n" + "".join(
    f"{chr(98 + level)}: &{chr(98 + level)} [{', '.join([f'*{chr(97 + level)}'] * 10)}]\n" for level in range(8)
)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            YTE_CONFIG,
            "config error: yte.yaml: __use_yte__ asks Snakemake to run the config's ?-expressions as Python; clipeval"
            " reads plain YAML configs only",
        ),
        (
            LOOPING_CONFIG,
            "config error: yte.yaml: line 2: a YAML alias contains itself; clipeval reads configs of finite values only",
        ),
        (
            EXPLODING_CONFIG,
            "config error: yte.yaml: holds more than 100,000 values once its YAML aliases are expanded; aliases that"
            " expand this far are refused",
        ),
    ],
)
def test_make_run_refuses_a_config_snakemake_would_run_or_choke_on_before_it_loads_it(tmp_path, text, message):
    """In a folder of its own (should the check let it through, Snakemake finds no workflow there), with this
    checkout's installed environment."""
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        shutil.copy(REPO / name, tmp_path / name)
    (tmp_path / "yte.yaml").write_text(text)
    environment = {key: value for key, value in os.environ.items() if key not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    venv = REPO / ".venv"
    # The installed marker of this checkout's FAISS build, taken as up to date: nothing is installed again.
    marker = next((venv / "bin").glob(".installed-*"), None)
    if marker is None:
        pytest.skip("no environment installed by make in this checkout")
    faiss = marker.name.removeprefix(".installed-")
    result = subprocess.run(
        ["make", "run", f"VENV={venv}", f"FAISS={faiss}", "-o", str(marker), "CONFIG=yte.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=environment,
    )
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == message
    assert not (tmp_path / "evaluated").exists()


def test_a_run_of_a_config_that_asks_for_yte_stops_in_one_line(tmp_path):
    """Snakemake has evaluated it by the time the workflow reads it (a config file is code), but no job runs."""
    workdir = copy_workflow(tmp_path)
    (workdir / "yte.yaml").write_text(YTE_CONFIG)
    result = snakemake(workdir, "--cores", "2", "--configfile", "yte.yaml")
    assert config_error_line(result) == (
        "config error: yte.yaml: __use_yte__ asks Snakemake to run the config's ?-expressions as Python; clipeval"
        " reads plain YAML configs only"
    )
    assert not (workdir / "results").exists()


def test_evaluate_picks_pairs(tmp_path):
    workdir = copy_workflow(tmp_path)
    edit_config(workdir, lambda config: config.update(evaluate=[{"model": "tiny-shapes", "dataset": "shapes-test"}]))
    assert planned_jobs(workdir) == {
        "prepare_shapes": 2,
        "train": 1,
        "describe_model": 1,
        **EXTRACTION,
        "knn": 2,
        "score_retrieval": 1,
        "summary": 1,
        "all": 1,
        **REPORT,
    }


def test_a_sweep_compares_in_one_job_per_dataset(tmp_path):
    workdir = copy_workflow(tmp_path)
    config_path = workdir / "config/config.yaml"
    config = yaml.safe_load(config_path.read_text())
    train = config["models"].pop("tiny-shapes")["train"]
    names = [f"seed-{seed:02d}" for seed in range(30)]
    config["models"] = {
        name: {"arch": "clipeval-tiny", "train": {**train, "seed": seed}} for seed, name in enumerate(names)
    }
    for baseline in (None, "seed-07"):
        if baseline:
            config["compare"] = {"baseline": baseline}
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        assert planned_jobs(workdir)["compare_models"] == 2
        result = snakemake(workdir, "--dry-run", "--printshellcmds")
        shell_lines = [line for line in (result.stdout + result.stderr).splitlines() if "python -m clipeval" in line]
        # No command grows with the sweep (summary, tables, plots, comparisons): a sweep of thousands of pairs
        # would pass the system's limit on one argument, which every job's `bash -c COMMAND` is.
        assert max(len(line) for line in shell_lines) < 2000, max(shell_lines, key=len)
        commands = [line for line in shell_lines if "clipeval compare-models" in line]
        assert len(commands) == 2
        tasks = {"shapes-classes": "classification", "shapes-test": "retrieval"}
        compared = set()
        for command in commands:
            # The list that grows with the sweep is in a file, not on the command line.
            arguments = re.search(r"compare-models --arguments-file (\S+) --dataset (\S+) ", command)
            dataset = arguments[2]
            compared.add(dataset)
            scores = "results/experiments/default/scores"
            ranks = [f"{scores}/{name}/{dataset}/{tasks[dataset]}-ranks.json" for name in names]
            assert json.loads((workdir / arguments[1]).read_text()) == [
                *ranks,
                "--names",
                *names,
                *(["--baseline", baseline] if baseline else []),
            ]
        assert compared == set(tasks)


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda c: c["models"]["tiny-shapes"]["train"].update(dataset="nowhere"),
            "config error: models.tiny-shapes.train.dataset: unknown dataset 'nowhere'"
            " (known: shapes-train, shapes-test, shapes-classes)",
        ),
        (lambda c: c.update(knn={"top_k": 0}), "config error: knn.top_k: 0 is less than the minimum of 1"),
        (
            lambda c: c.update(knn={"top_k": 5}),
            "config error: knn.top_k: 5 is too few: R@10 needs at least 10 predictions",
        ),
        (
            lambda c: c.update(knn={"top_k": 20}, metrics={"recall_at": [1, 50]}),
            "config error: knn.top_k: 20 is too few: R@50 needs at least 50 predictions",
        ),
        (
            lambda c: c.update(metrics={"recall_at": [1, 5, 5]}),
            "config error: metrics.recall_at: [1, 5, 5] has non-unique elements",
        ),
        (
            lambda c: c["models"].update(bad={"arch": "ViT-B-32"}),
            "config error: models.bad: a model gives arch with pretrained, arch with train, arch with checkpoints (a series), or features alone; it gives arch",
        ),
        (
            lambda c: c["datasets"]["shapes-test"].update(num_imagess=5),
            "config error: datasets.shapes-test: unknown key 'num_imagess' (allowed: first_image_id, format, num_images, protocol,"
            " published, seed, task, train_split)",
        ),
        (
            lambda c: c["datasets"]["shapes-test"].update(format="flickr"),
            "config error: datasets.shapes-test.format: unknown format 'flickr' (allowed: aligned_lines, aro, aro_order, cifar, cnclip, coco,"
            " imagefolder, karpathy, parquet_classification, parquet_retrieval, shapes, sugarcrepe, wds_classification,"
            " wds_retrieval, winogavil, winoground, xm3600)",
        ),
        (
            lambda c: c["datasets"].update(
                flickr={"format": "karpathy", "task": "retrieval", "annotations": "nope.json", "images": "config"}
            ),
            "config error: datasets.flickr.annotations: file nope.json not found",
        ),
        (
            lambda c: c["datasets"].update(
                flickr={"format": "karpathy", "task": "retrieval", "annotations": "Snakefile", "images": "images/"}
            ),
            "config error: datasets.flickr.images: folder images/ not found",
        ),
        (
            lambda c: c["models"].update(
                given={"features": {"shapes-test": {"images": "i.jsonl", "texts": "Snakefile"}}}
            ),
            "config error: models.given.features.shapes-test.images: file i.jsonl not found",
        ),
    ],
)
def test_config_errors_are_reported(tmp_path, change, message):
    """Through Snakemake, as a user meets them: schema errors, a check of each kind that spans sections, and
    files not found. Every reference check has its exact message in tests/test_planning.py."""
    workdir = copy_workflow(tmp_path)
    config_path = workdir / "config/config.yaml"
    config = yaml.safe_load(config_path.read_text())
    change(config)
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    result = snakemake(workdir, "--dry-run")
    assert message in config_error_line(result)


def test_a_repeated_key_or_an_alias_bomb_in_a_config_file_is_refused_in_one_line(tmp_path):
    """Snakemake's YAML loading keeps a repeated key's last value and shares aliased objects; planning refuses
    both before the schema reads the config (tests/test_config_errors.py has the cases)."""
    from test_config_errors import ALIAS_BOMB

    workdir = copy_workflow(tmp_path)
    default = (workdir / "config/config.yaml").read_text()
    (workdir / "config/repeated.yaml").write_text(default + "numerics: native\n")
    (workdir / "config/bomb.yaml").write_text(ALIAS_BOMB + "\n")
    line = len(default.splitlines()) + 1
    for config_file, message in (
        ("config/repeated.yaml", f"config error: config/repeated.yaml: line {line}: key 'numerics' is given twice"),
        ("config/bomb.yaml", "config error: config/bomb.yaml: holds more than 100,000 values once its YAML aliases"),
    ):
        result = snakemake(workdir, "--dry-run", "--configfile", config_file)
        assert config_error_line(result).startswith(message)
    assert not (workdir / "results").exists()


def test_top_k_defaults_to_the_largest_k_and_folds_need_no_top_k(tmp_path):
    """knn's lists are as deep as the largest K asked for; a folds-1k dataset runs no knn, so its K values
    do not bound knn.top_k."""
    workdir = copy_workflow(tmp_path)
    config_path = workdir / "config/config.yaml"
    config = yaml.safe_load(config_path.read_text())
    del config["knn"]["top_k"]
    config["metrics"]["recall_at"] = [1, 5, 10, 50]
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    result = snakemake(workdir, "--dry-run", "--printshellcmds")
    commands = [line for line in result.stdout.splitlines() if "clipeval make-topk-predictions" in line]
    assert result.returncode == 0 and len(commands) == 2, result.stdout + result.stderr
    assert all(" --top-k 50 " in command for command in commands)
    scoring = [line for line in result.stdout.splitlines() if "clipeval score-retrieval" in line]
    assert len(scoring) == 1 and " --recall-at 1 5 10 50 " in scoring[0]

    config["knn"]["top_k"] = 5
    config["datasets"]["shapes-test"]["protocol"] = "folds-1k"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    result = snakemake(workdir, "--dry-run")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "rule knn:" not in result.stdout


def test_a_failed_job_s_message_is_repeated_where_the_run_ends(tmp_path):
    """A job that fails at run time (an image its annotations name is missing) ends the run's output with one
    line naming its rule, its log and the log's message, after Snakemake's own shutdown lines."""
    workdir = copy_workflow(tmp_path)
    write_karpathy(workdir / "sources")
    flickr = {"format": "karpathy", "task": "retrieval", "annotations": "sources/dataset_flickr30k.json"}
    edit_config(workdir, lambda c: c["datasets"].update(flickr={**flickr, "images": "sources/flickr30k-images"}))
    (workdir / "sources/flickr30k-images/7003.png").unlink()
    meta = shared_path(workdir, "dataset_meta", dataset="flickr")
    result = snakemake(workdir, "--cores", "2", meta)
    lines = result.stderr.splitlines()
    summary = [line for line in lines if line.startswith("failed: ")]
    assert result.returncode == 1 and summary == [
        f"failed: prepare_karpathy (logs/prepare/{os.path.basename(os.path.dirname(meta))}.log): clipeval: error:"
        " sources/dataset_flickr30k.json: image_id 3: image file sources/flickr30k-images/7003.png not found"
    ], result.stderr[-3000:]
    assert lines.index(summary[0]) > lines.index(
        "Exiting because a job execution failed. Look above for error messages"
    )


def test_weights_that_do_not_fit_their_arch_stop_the_run_before_its_first_job(tmp_path, tiny_checkpoint):
    workdir = copy_workflow(tmp_path)
    shutil.copy(tiny_checkpoint, workdir / "tiny.pt")
    edit_config(
        workdir,
        lambda config: config.update(
            datasets={"shapes": {"format": "shapes", "task": "retrieval", "num_images": 20, "seed": 1}},
            models={"mine": {"arch": "RN50", "pretrained": "tiny.pt"}},
        ),
    )
    result = snakemake(workdir, "--cores", JOB_CORES)
    output = result.stdout + result.stderr
    assert result.returncode == 1 and job_counts(output) == {}, output[-3000:]
    assert output.splitlines()[-1].startswith(
        "config error: models.mine.pretrained: tiny.pt: weights do not fit arch 'RN50': missing from the file:"
        " visual.layer1.1.conv1.weight, visual.layer1.1.bn1.weight, visual.layer1.1.bn1.bias and 333 more; shapes:"
        " positional_embedding [32, 64] in the file, [77, 512] in the arch;"
    )
    assert not (workdir / "results").exists()
