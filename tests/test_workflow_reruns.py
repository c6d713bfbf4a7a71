"""What runs after the default experiment's run (tests/conftest.py's `default_experiment`, which
tests/test_workflow.py checks): a new model or dataset, other experiments beside it, a mistyped path. A
file of its own, so that a second worker runs these while the first checks the run itself."""

import base64
import copy
import json
import re
import shutil

import pytest
import yaml
from conftest import run_cli
from snakemake_runner import (
    EXTRACTION,
    JOB_CORES,
    REPORT,
    config_error_line,
    copy_workflow,
    job_counts,
    planned_jobs,
    read_csv,
    read_summary,
    recorded_folders,
    run_jobs,
    snakemake,
)

pytestmark = [pytest.mark.workflow, pytest.mark.minutes(1)]


@pytest.fixture(scope="module")
def default_run(default_experiment):
    """The default experiment's finished directory, as `make run` leaves it."""
    return default_experiment.workdir


def write_cnclip_files(directory, source_dataset):
    """Export a prepared dataset as Chinese-CLIP files: tsv of base64 images + texts jsonl."""
    from clipeval.data.dataset import open_dataset

    store, captions = open_dataset(source_dataset)
    ids = store.image_ids()[:40]
    with open(directory / "valid_imgs.tsv", "w") as tsv:
        for image_id in ids:
            tsv.write(f"{image_id}\t{base64.b64encode(store.encoded_bytes(int(image_id))).decode()}\n")
    with open(directory / "valid_texts.jsonl", "w") as texts:
        for text_id, text, positives in zip(captions.text_ids, captions.texts, captions.image_ids):
            if positives[0] in ids:
                texts.write(json.dumps({"text_id": int(text_id), "text": text, "image_ids": positives.tolist()}) + "\n")


def test_new_model_and_new_dataset_add_only_their_own_jobs(default_run, tmp_path):
    workdir = copy_of_run(default_run, tmp_path)
    config_path = workdir / "config/config.yaml"
    config = yaml.safe_load(config_path.read_text())
    assert planned_jobs(workdir) == {}

    trained = recorded_folders(workdir)["checkpoints"]["tiny-shapes"]
    config["models"]["tiny-copy"] = {"arch": "clipeval-tiny", "pretrained": trained}
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    # its retrieval jobs on shapes-test and its classification jobs on shapes-classes
    assert planned_jobs(workdir) == {
        "describe_model": 1,
        "extract_text_features": 1,
        "extract_image_shard": 2,
        "gather_image_features": 2,
        "knn": 2,
        "score_retrieval": 1,
        "encode_classes": 1,
        "score_classification": 1,
        "compare_models": 2,
        "summary": 1,
        "all": 1,
        # its report sections, and the figures and tables that list every model
        "retrieval_failures": 1,
        "classification_failures": 1,
        "plot_retrieval": 1,
        "plot_classification": 1,
        "plot_comparisons": 2,
        "report_tables": 1,
    }

    write_cnclip_files(workdir, workdir / recorded_folders(workdir)["datasets"]["shapes-test"])
    config["datasets"]["flickr-like"] = {
        "format": "cnclip",
        "task": "retrieval",
        "images": "valid_imgs.tsv",
        "texts": "valid_texts.jsonl",
    }
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    # plus the new dataset's retrieval jobs for both models
    assert planned_jobs(workdir) == {
        "prepare_cnclip": 1,
        "describe_model": 1,
        # the new dataset's images, decoded once for both models: they preprocess alike
        "decode_pixels": 1,
        "extract_text_features": 3,
        "extract_image_shard": 4,
        "gather_image_features": 4,
        "knn": 6,
        "score_retrieval": 3,
        "encode_classes": 1,
        "score_classification": 1,
        "compare_models": 3,
        "summary": 1,
        "all": 1,
        "retrieval_failures": 3,
        "classification_failures": 1,
        "plot_retrieval": 2,
        "plot_classification": 1,
        "plot_comparisons": 3,
        "report_tables": 1,
    }

    result = snakemake(workdir, "--cores", JOB_CORES)
    assert result.returncode == 0, result.stderr[-3000:]
    assert job_counts(result.stdout + result.stderr)["decode_pixels"] == 1
    assert planned_jobs(workdir) == {}
    rows = read_summary(workdir)
    datasets = ["shapes-test", "shapes-classes", "flickr-like"]
    assert [(r["model"], r["dataset"]) for r in rows] == [
        (m, d) for m in ("tiny-shapes", "tiny-copy") for d in datasets
    ]
    # the same weights give the same numbers, whatever the model is called
    for first, second in zip(rows[:3], rows[3:]):
        assert {k: v for k, v in first.items() if k != "model"} == {k: v for k, v in second.items() if k != "model"}
    assert int(rows[2]["images"]) == 40
    differences = read_csv(workdir / "results/experiments/default/comparisons.csv")
    assert {(r["dataset"], r["first"], r["second"]) for r in differences} == {
        (d, "tiny-shapes", "tiny-copy") for d in datasets
    }
    assert {r["difference"] for r in differences if r["difference"]} == {"0.0"}
    # the forest plot shows the comparisons file's differences and intervals
    comparison = json.loads((workdir / "results/experiments/default/comparisons/shapes-test.json").read_text())
    [pair] = comparison["comparisons"]
    forest = read_csv(workdir / "results/experiments/default/report/shapes-test/comparisons.csv")
    assert [(r["pair"], r["metric"]) for r in forest] == [
        ("tiny-shapes − tiny-copy", metric) for metric in ("t2i_R@1", "i2t_R@1", "mean_recall")
    ]
    assert [float(r["ci_low"]) for r in forest] == [
        pair["intervals"]["t2i"]["R@1"][0],
        pair["intervals"]["i2t"]["R@1"][0],
        pair["intervals"]["mean_recall"][0],
    ]


def copy_of_run(run, tmp_path):
    """A copy of the workflow with a finished run's results and Snakemake's records of them."""
    workdir = copy_workflow(tmp_path)
    shutil.copytree(run / "results", workdir / "results", symlinks=True)
    shutil.copytree(
        run / ".snakemake",
        workdir / ".snakemake",
        symlinks=True,
        ignore=shutil.ignore_patterns("log", "locks", "incomplete"),
    )
    return workdir


def test_another_experiments_checkpoint_is_read_not_remade(default_run, tmp_path):
    """A second experiment in the same directory names the first one's trained checkpoint as `pretrained:`."""
    workdir = copy_of_run(default_run, tmp_path)
    config = yaml.safe_load((workdir / "config/config.yaml").read_text())
    trained = recorded_folders(workdir)["checkpoints"]["tiny-shapes"]
    other = {
        "datasets": {"shapes-test": config["datasets"]["shapes-test"]},
        "models": {"reused": {"arch": "clipeval-tiny", "pretrained": trained}},
        "extract": config["extract"],
    }
    (workdir / "config/other.yaml").write_text(yaml.safe_dump(other, sort_keys=False))
    assert planned_jobs(workdir, "--configfile", "config/other.yaml") == {
        "describe_model": 1,
        **EXTRACTION,
        "knn": 2,
        "score_retrieval": 1,
        "summary": 1,
        "all": 1,
        **REPORT,
    }


# The default experiment's scores of its model on its retrieval dataset.
SCORES = "results/experiments/default/scores/tiny-shapes/shapes-test/retrieval.json"
# What a second experiment runs when every shared artifact it needs exists: its own scores and report.
SCORED_HERE = {"score_retrieval": 1, "summary": 1, "all": 1, **REPORT}


def planned_folder(workdir, config_file, *args):
    """The results/experiments/ folder a dry run of `config_file` writes its summary to, and its notes."""
    result = snakemake(workdir, "--dry-run", "--configfile", config_file, *args)
    assert result.returncode == 0, result.stderr[-3000:]
    [folder] = set(re.findall(r"results/experiments/([^/\s]+)/summary\.csv", result.stdout))
    return folder, [line for line in result.stderr.splitlines() if line.startswith("note: ")]


def test_experiments_share_what_they_define_alike_and_never_block_each_other(default_run, tmp_path):
    workdir = copy_of_run(default_run, tmp_path)
    default_summary = (workdir / "results/experiments/default/summary.md").read_bytes()
    config = yaml.safe_load((workdir / "config/config.yaml").read_text())
    second = {
        "datasets": {name: config["datasets"][name] for name in ("shapes-train", "shapes-test")},
        "models": config["models"],
    }

    def write(name, content):
        (workdir / f"config/{name}.yaml").write_text(yaml.safe_dump(content, sort_keys=False))
        return f"config/{name}.yaml"

    # The same model on the same dataset: its dataset, checkpoint, features and predictions are the default
    # experiment's, computed once; its scores, summary and report are its own.
    write("second", second)
    assert planned_jobs(workdir, "--configfile", "config/second.yaml") == SCORED_HERE
    assert not (workdir / "results/experiments/second").exists(), "a dry run wrote the experiment"
    result = snakemake(workdir, "--cores", JOB_CORES, "--configfile", "config/second.yaml")
    assert result.returncode == 0, result.stderr[-3000:]
    [second_row], default_row = read_summary(workdir, "second"), read_summary(workdir)[0]
    assert second_row.items() <= default_row.items()  # its table has no classification columns
    assert (workdir / "results/experiments/default/summary.md").read_bytes() == default_summary
    assert planned_jobs(workdir) == {}

    listed = run_cli("list-experiments", cwd=workdir)
    headline = f"{float(read_summary(workdir)[0]['mean_recall']):.2f}"
    top1 = f"{float(read_summary(workdir)[1]['top1']):.2f}"
    assert listed.stdout.splitlines() == [
        "experiment  model        dataset         task            metric       value  summary",
        f"default     tiny-shapes  shapes-classes  classification  top1         {top1}  "
        "results/experiments/default/summary.csv",
        f"default     tiny-shapes  shapes-test     retrieval       mean_recall  {headline}  "
        "results/experiments/default/summary.csv",
        f"second      tiny-shapes  shapes-test     retrieval       mean_recall  {headline}  "
        "results/experiments/second/summary.csv",
    ]

    # A setting that only scoring reads re-scores this experiment and extracts nothing; the other is untouched.
    write("second", {**second, "metrics": {"bootstrap": 200}})
    assert run_jobs(workdir, "--configfile", "config/second.yaml") == SCORED_HERE
    assert json.loads((workdir / SCORES).read_text())["bootstrap"]["replicates"] == 1000
    second_scores = workdir / SCORES.replace("/default/", "/second/")
    assert json.loads(second_scores.read_text())["bootstrap"]["replicates"] == 200
    assert planned_jobs(workdir) == {}

    # One definition under other names is the same model and dataset: nothing to prepare, train or extract.
    model = copy.deepcopy(config["models"]["tiny-shapes"])
    model["train"]["dataset"] = "my-train"
    renamed = {
        "datasets": {"my-train": config["datasets"]["shapes-train"], "my-test": config["datasets"]["shapes-test"]},
        "models": {"my-tiny": model},
    }
    assert planned_jobs(workdir, "--configfile", write("renamed", renamed)) == SCORED_HERE

    # Another definition under a taken name gets its own artifacts (a dry run: training is minutes).
    model = copy.deepcopy(config["models"]["tiny-shapes"])
    model["train"]["epochs"] = 3
    assert planned_jobs(workdir, "--configfile", write("second", {**second, "models": {"tiny-shapes": model}})) == {
        "train": 1,
        "describe_model": 1,
        **EXTRACTION,
        "knn": 2,
        **SCORED_HERE,
    }

    # A copied config under a name another config's run holds is a new experiment, unless it takes the name over.
    write("second", second)
    copy_file = write("copy", {**second, "experiment": "second"})
    assert planned_folder(workdir, copy_file) == (
        "second-2",
        [
            "note: experiment 'second' is the experiment of config/second.yaml"
            " (results/experiments/second/experiment.json); this config's results go to"
            " results/experiments/second-2 (replace: true would take the name over)"
        ],
    )
    assert planned_folder(workdir, copy_file, "--config", "replace=True") == ("second", [])

    # A failed first run holds no name: a copy with the name writes it.
    broken = {**second, "experiment": "third"}
    broken["datasets"] = {**second["datasets"], "shapes-test": {"format": "cnclip", "task": "retrieval"}}
    (workdir / "broken.tsv").write_text("1\tnot base64 of an image\n")
    (workdir / "broken.jsonl").write_text('{"text_id": 1, "text": "a", "image_ids": [1]}\n')
    broken["datasets"]["shapes-test"].update(images="broken.tsv", texts="broken.jsonl")
    result = snakemake(workdir, "--cores", JOB_CORES, "--configfile", write("third", broken))
    assert result.returncode == 1 and not (workdir / "results/experiments/third/experiment.json").exists()
    assert planned_folder(workdir, write("third-fixed", {**second, "experiment": "third"})) == ("third", [])


def test_a_mistyped_path_stops_the_run_even_when_results_exist(default_run, tmp_path):
    """Snakemake would plan nothing for finished jobs; the config's paths are checked before it plans."""
    workdir = copy_workflow(tmp_path)
    shutil.copytree(default_run / "results", workdir / "results", symlinks=True)
    config_path = workdir / "config/config.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["models"]["tiny-copy"] = {"arch": "clipeval-tiny", "pretrained": "results/models/tiny-shape/checkpoint.pt"}
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    result = snakemake(workdir, "--cores", JOB_CORES)
    assert config_error_line(result) == (
        "config error: models.tiny-copy.pretrained: file results/models/tiny-shape/checkpoint.pt not found"
        f" (relative to {workdir}, the working directory)"
    )
