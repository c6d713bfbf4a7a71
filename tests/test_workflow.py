"""The whole workflow through the real Snakemake, in a temporary copy of the repository: the default experiment's
run, and what runs after it. tests/test_workflow_checks.py has the checks that need no finished run."""

import base64
import copy
import csv
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import REPO, run_cli
from snakemake_runner import (
    EXTRACTION,
    JOB_CORES,
    REPORT,
    config_error_line,
    copy_workflow,
    job_counts,
    planned_jobs,
    read_summary,
    recorded_folders,
    run_jobs,
    snakemake,
)


def recorded_predictions(workdir, pair, direction="t2i", top_k=10, experiment="default"):
    features = recorded_folders(workdir, experiment)["features"][pair]
    return f"{features.replace('features', 'predictions', 1)}/top-{top_k}/{direction}.jsonl"


@pytest.fixture(scope="module")
def default_run(default_experiment):
    """The default experiment's finished directory (tests/conftest.py), as `make run` leaves it."""
    return default_experiment.workdir


def test_default_workflow_recall_is_far_above_chance(default_run):
    rows = read_summary(default_run)
    assert [(r["model"], r["dataset"], r["task"]) for r in rows] == [
        ("tiny-shapes", "shapes-test", "retrieval"),
        ("tiny-shapes", "shapes-classes", "classification"),
    ]
    row = rows[0]
    assert (int(row["images"]), int(row["texts"])) == (1000, 5000)
    recall = {name: float(row[name]) for name in row if "_R@" in name and not name.endswith(("_ci_low", "_ci_high"))}
    assert all(0 <= value <= 100 for value in recall.values())
    assert recall["t2i_R@1"] <= recall["t2i_R@5"] <= recall["t2i_R@10"]
    assert recall["i2t_R@1"] <= recall["i2t_R@5"] <= recall["i2t_R@10"]
    chance_t2i_r10 = 100 * 10 / 1000  # one positive image among 1000
    chance_i2t_r10 = 100 * (1 - (1 - 5 / 5000) ** 10)  # five positive captions among 5000
    assert recall["t2i_R@10"] >= 10 * chance_t2i_r10
    assert recall["i2t_R@10"] >= 10 * chance_i2t_r10
    assert float(row["rsum"]) == pytest.approx(sum(recall.values()), abs=0.01)
    assert float(row["rsum_ci_low"]) <= float(row["rsum"]) <= float(row["rsum_ci_high"])


def test_default_workflow_classifies_shapes_far_above_chance(default_run):
    row = read_summary(default_run)[1]
    assert (int(row["images"]), int(row["classes"])) == (600, 6)
    chance = 100 / 6  # ± 1.5 points over 600 images
    assert float(row["top1"]) >= 1.5 * chance
    assert float(row["top1"]) <= float(row["top5"]) <= 100
    scores = default_run / "results/experiments/default/scores/tiny-shapes/shapes-classes/classification.json"
    assert sum(map(sum, json.loads(scores.read_text())["confusion_matrix"])) == 600


def test_default_workflow_writes_the_documented_paths(default_run):
    folders = recorded_folders(default_run)
    test, classes, train = (folders["datasets"][name] for name in ("shapes-test", "shapes-classes", "shapes-train"))
    model, checkpoint = folders["models"]["tiny-shapes"], folders["checkpoints"]["tiny-shapes"]
    # Shared artifacts under the keys of their definitions (docs/ARCHITECTURE.md), scores under the experiment.
    key = r"[0-9a-f]{12}"
    assert re.fullmatch(f"results/datasets/{key}", test) and re.fullmatch(f"results/models/{key}", model)
    assert re.fullmatch(f"results/checkpoints/{key}/checkpoint.pt", checkpoint)
    model_key, test_key, classes_key, train_key = (Path(folder).name for folder in (model, test, classes, train))
    on_test, on_classes = (f"results/features/{model_key}/{key}" for key in (test_key, classes_key))
    assert folders["features"] == {"tiny-shapes on shapes-test": on_test, "tiny-shapes on shapes-classes": on_classes}
    predictions = on_test.replace("features", "predictions") + "/top-10"
    scores = "results/experiments/default/scores/tiny-shapes"
    expected = [
        f"{test}/images.lmdb/data.mdb",
        f"{test}/texts.jsonl",
        f"{train}/texts.jsonl",
        checkpoint,
        f"{on_test}/images.jsonl",
        f"{on_test}/texts.jsonl",
        f"{predictions}/t2i.jsonl",
        f"{predictions}/i2t.jsonl",
        f"{scores}/shapes-test/retrieval.json",
        f"{scores}/shapes-test/retrieval-ranks.json",
        f"{classes}/labels.jsonl",
        f"{classes}/classes.json",
        f"{on_classes}/classes.jsonl",
        f"{scores}/shapes-classes/classification.json",
        f"{scores}/shapes-classes/classification-ranks.json",
        "results/experiments/default/experiment.json",
        "results/experiments/default/summary.md",
        "results/experiments/default/averages.csv",
        "results/experiments/default/comparisons.csv",
        f"logs/prepare/{test_key}.log",
        f"logs/train/{Path(checkpoint).parent.name}.log",
        f"logs/extract/{model_key}/{test_key}/texts.log",
        f"logs/extract/{model_key}/{test_key}/images-by-0-0.log",
        f"{model}/meta.json",
        f"logs/extract/{model_key}/meta.log",
        f"logs/knn/{model_key}/{test_key}/top-10/t2i.log",
        "logs/score/default/tiny-shapes/shapes-test.log",
        f"logs/classify/{model_key}/{classes_key}/classes.log",
        "logs/classify/default/tiny-shapes/shapes-classes/score.log",
        "logs/summary/default.log",
        "results/experiments/default/report/results.html",
        "results/experiments/default/report/provenance.html",
        "results/experiments/default/report/shapes-test/recall-curves.png",
        "results/experiments/default/report/shapes-test/tiny-shapes/failures-t2i.png",
        "results/experiments/default/report/shapes-classes/class-recall.png",
        "results/experiments/default/report/shapes-classes/tiny-shapes/confusion.png",
        "logs/report/default/tables.log",
        "logs/report/default/shapes-test/tiny-shapes/failures.log",
    ]
    assert [p for p in expected if not (default_run / p).exists()] == []
    assert not (default_run / f"results/features/{model_key}/{train_key}").exists()
    metrics = json.loads((default_run / f"{scores}/shapes-test/retrieval.json").read_text())
    assert set(metrics) == {
        "task",
        "protocol",
        "t2i",
        "i2t",
        "rsum",
        "mean_recall",
        "intervals",
        "bootstrap",
        "counts",
        "provenance",
    }
    assert metrics["task"] == "retrieval" and metrics["protocol"] == "full"
    assert metrics["bootstrap"]["replicates"] == 1000 and metrics["counts"]["predictions_per_query"] == 10
    low, high = metrics["intervals"]["t2i"]["median_rank"]
    assert low <= metrics["t2i"]["median_rank"] <= high
    assert metrics["provenance"]["config"]["model"]["train"]["dataset"] == "shapes-train"


def test_the_readme_shows_what_a_fresh_run_prints(default_run):
    """The README's headline numbers are the default experiment's, to the last digit, on this machine too."""
    from clipeval.reporting.summary import headline_block

    readme = headline_block((REPO / "README.md").read_text(), "README.md")
    fresh = headline_block((default_run / "results/experiments/default/summary.md").read_text(), "summary.md")
    assert readme == fresh, "README.md's numbers differ from a fresh run: run `make readme` and commit"


def read_csv(path):
    with open(path) as handle:
        return list(csv.DictReader(handle))


def test_the_report_figures_show_the_metrics_files_numbers(default_run):
    """Each figure's numbers (the CSV or JSON beside it) against the score stage's files."""
    report = default_run / "results/experiments/default/report"
    scores = default_run / "results/experiments/default/scores/tiny-shapes"
    retrieval = json.loads((scores / "shapes-test/retrieval.json").read_text())
    ranks = json.loads((scores / "shapes-test/retrieval-ranks.json").read_text())
    curves = read_csv(report / "shapes-test/recall-curves.csv")
    for direction in ("t2i", "i2t"):
        curve = {int(r["k"]): float(r["recall"]) for r in curves if r["direction"] == direction}
        assert sorted(curve) == list(range(1, 101))
        for k in (1, 5, 10):
            assert curve[k] == pytest.approx(retrieval[direction][f"R@{k}"], abs=1e-6)
        assert curve[100] == pytest.approx(
            100 * sum(r <= 100 for r in ranks[direction]["ranks"]) / len(ranks[direction]["ranks"]), abs=1e-6
        )
        bins = [r for r in read_csv(report / "shapes-test/rank-distribution.csv") if r["direction"] == direction]
        assert sum(int(b["queries"]) for b in bins) == len(ranks[direction]["ranks"])
        assert (bins[0]["rank_from"], bins[0]["rank_to"]) == ("1", "1")
        assert float(bins[0]["percent"]) == pytest.approx(retrieval[direction]["R@1"], abs=1e-6)

    # The worst queries are those of the highest ranks; what they retrieve is the knn stage's top-k list.
    t2i = json.loads((report / "shapes-test/tiny-shapes/failures-t2i.json").read_text())
    assert len(t2i) == 8
    assert [f["rank"] for f in t2i] == sorted(ranks["t2i"]["ranks"], reverse=True)[:8]
    predictions = {
        row["text_id"]: row
        for row in map(json.loads, open(default_run / recorded_predictions(default_run, "tiny-shapes on shapes-test")))
    }
    for failure in t2i:
        listed = predictions[failure["query_id"]]
        assert failure["retrieved"] == listed["image_ids"][:5]
        assert failure["scores"] == pytest.approx(listed["scores"][:5], abs=1e-6)
        assert not set(failure["positives"]) & set(failure["retrieved"])  # its rank is past the top 5

    classification = json.loads((scores / "shapes-classes/classification.json").read_text())
    recall = {r["class"]: float(r["recall"]) for r in read_csv(report / "shapes-classes/class-recall.csv")}
    assert recall == pytest.approx({name: entry["recall"] for name, entry in classification["per_class"].items()})
    # The matrix is in class index order (classes.json), as in classification.json.
    classes = default_run / recorded_folders(default_run)["datasets"]["shapes-classes"] / "classes.json"
    classnames = json.loads(classes.read_text())["classnames"]
    confusion = read_csv(report / "shapes-classes/tiny-shapes/confusion.csv")
    assert [row["true \\ predicted"] for row in confusion] == classnames
    assert [[int(row[name]) for name in classnames] for row in confusion] == classification["confusion_matrix"]


def test_the_report_opens_in_a_real_browser(default_run):
    """snakemake --report builds one HTML file; chromium loads it without errors and renders every figure."""
    from browser import visit_report

    result = snakemake(default_run, "--report", "results/report.html")
    assert result.returncode == 0, result.stderr[-3000:]
    report = default_run / "results/report.html"
    screenshot = default_run / "results/report-screenshot.png"
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


def test_a_finished_run_has_nothing_to_do(default_run):
    assert planned_jobs(default_run) == {}
    result = snakemake(default_run, "--cores", JOB_CORES)
    assert result.returncode == 0 and "Nothing to be done" in result.stdout + result.stderr


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
    workdir = copy_workflow(tmp_path)
    shutil.copytree(default_run / "results", workdir / "results", symlinks=True)
    shutil.copytree(
        default_run / ".snakemake",
        workdir / ".snakemake",
        symlinks=True,
        ignore=shutil.ignore_patterns("log", "locks", "incomplete"),
    )
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
    differences = list(csv.DictReader(open(workdir / "results/experiments/default/comparisons.csv")))
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
