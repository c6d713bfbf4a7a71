"""The linear probe through the real Snakemake: the train split's and test split's image features extracted once
per model (the test split's shared with its zero-shot entry), each fit's numbers equal to scikit-learn's
LogisticRegression on the same feature files, the summary's and report's probe rows, paired comparisons, and a
probe setting that re-runs the probe alone."""

import csv
import json

import numpy as np
import pytest
import yaml
from snakemake_runner import copy_workflow, planned_jobs, recorded_folders, run_jobs, snakemake
from test_series_workflow import write_checkpoint

pytestmark = pytest.mark.minutes(1)

CONFIG = {
    "experiment": "probing",
    "datasets": {
        "shapes-train": {"format": "shapes", "task": "probe_train", "num_images": 150, "seed": 5},
        "shapes-probe": {
            "format": "shapes",
            "task": "probe",
            "train_split": "shapes-train",
            "num_images": 60,
            "seed": 6,
        },
        "shapes-zero-shot": {"format": "shapes", "task": "classification", "num_images": 60, "seed": 6},
    },
    "models": {
        "first": {"arch": "clipeval-tiny", "pretrained": "weights/first.pt"},
        "second": {"arch": "clipeval-tiny", "pretrained": "weights/second.pt"},
        # A random tiny model's features hardly tell the shapes apart: these do, so the fits have choices to make.
        "given": {
            "features": {
                "shapes-train": {"images": "given/train.jsonl"},
                "shapes-probe": {"images": "given/test.jsonl"},
            }
        },
    },
    "extract": {"batch_size": 32, "num_workers": 0, "device": "cpu"},
    "metrics": {"bootstrap": 100},
    "probe": {"shots": [2, "all"], "seeds": 2, "regularization": [0.001, 0.1]},
    "suites": {"shapes": ["shapes-zero-shot", "shapes-probe"]},
}


def write_class_features(path, num_images, seed):
    """Unit features of the shapes `generate_shapes` draws: a point near its class's own direction."""
    from clipeval.data.sources.shapes import generate_shapes

    _, _, labels = generate_shapes(num_images, seed)
    rng = np.random.default_rng(seed)
    directions = np.random.default_rng(0).normal(size=(6, 16))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        for image_id, label in labels:
            feature = directions[label] + 1.5 * rng.normal(size=16)
            feature /= np.linalg.norm(feature)
            handle.write(json.dumps({"image_id": image_id, "feature": feature.astype(np.float32).tolist()}) + "\n")


def sklearn_top1(train_x, train_y, test_x, test_y, l2):
    """scikit-learn's LogisticRegression at the penalty `l2` on the mean loss: its C is 1 / (l2 · n)."""
    from sklearn.linear_model import LogisticRegression

    reference = LogisticRegression(C=1 / (l2 * len(train_y)), tol=1e-10, max_iter=100_000).fit(train_x, train_y)
    return 100 * np.mean(reference.predict(test_x) == test_y)


def check_fit(fit, train_ids, train_x, train_y, test_x, test_y, grid):
    """The fit's penalty is the grid's best on its validation images (the larger on a tie), and its test top-1
    is scikit-learn's at that penalty, fitted on the same images."""
    rows = {image_id: row for row, image_id in enumerate(train_ids)}
    held = [rows[i] for i in fit["validated_on"]]
    fitted = [rows[i] for i in fit["fitted_on"]] if "fitted_on" in fit else list(range(len(train_ids)))
    chosen_on = sorted(set(fitted) - set(held)) if "fitted_on" not in fit else fitted
    validation = {
        l2: sklearn_top1(train_x[chosen_on], train_y[chosen_on], train_x[held], train_y[held], l2) for l2 in grid
    }
    best = max(validation.values())
    assert fit["l2"] == max(l2 for l2, top1 in validation.items() if top1 == best)
    assert fit["validation_top1"] == best
    assert fit["top1"] == sklearn_top1(train_x[fitted], train_y[fitted], test_x, test_y, fit["l2"])


def labelled_features(folder, dataset_folder, name="images.jsonl"):
    rows = [json.loads(line) for line in open(folder / name)]
    labels = {row["image_id"]: row["label"] for row in map(json.loads, open(dataset_folder / "labels.jsonl"))}
    features = np.array([row["feature"] for row in rows], dtype=np.float32).astype(np.float64)
    ids = [row["image_id"] for row in rows]
    return np.array(ids), features, np.array([labels[i] for i in ids])


@pytest.mark.workflow
def test_a_probe_fits_on_its_train_split_and_scores_like_scikit_learn(tmp_path):
    workdir = copy_workflow(tmp_path / "workflow")
    write_checkpoint(workdir / "weights/first.pt", 1)
    write_checkpoint(workdir / "weights/second.pt", 2)
    write_class_features(workdir / "given/train.jsonl", 150, 5)
    write_class_features(workdir / "given/test.jsonl", 60, 6)
    (workdir / "config/config.yaml").write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    jobs = run_jobs(workdir)
    # The probe's test split and the zero-shot set are one prepared dataset: its features are extracted once.
    assert jobs["prepare_shapes"] == 2 and jobs["gather_image_features"] == 4 and jobs["encode_classes"] == 2
    assert jobs["score_probe"] == 3 and jobs["score_classification"] == 2 and jobs["compare_models"] == 2

    folders = recorded_folders(workdir, "probing")
    experiment = workdir / "results/experiments/probing"
    for model in ("first", "second", "given"):
        if model == "given":
            train = labelled_features(workdir / "given", workdir / folders["datasets"]["shapes-train"], "train.jsonl")
            test = labelled_features(workdir / "given", workdir / folders["datasets"]["shapes-probe"], "test.jsonl")
        else:
            train, test = (
                labelled_features(workdir / folders["features"][f"{model} on {d}"], workdir / folders["datasets"][d])
                for d in ("shapes-train", "shapes-probe")
            )
        train_ids, train_x, train_y = train
        scores = json.loads((experiment / f"scores/{model}/shapes-probe/probe.json").read_text())
        assert scores["headline_shots"] == "all" and scores["counts"]["train_images"] == 150
        for label, fits in scores["shots"].items():
            for fit in fits["fits"]:
                check_fit(fit, train_ids, train_x, train_y, *test[1:], CONFIG["probe"]["regularization"])
                if label == "2":
                    drawn = [train_y[list(train_ids).index(i)] for i in fit["fitted_on"]]
                    assert sorted(drawn) == sorted(list(range(6)) * 2)
                    assert not set(fit["fitted_on"]) & set(fit["validated_on"])
        all_shots = scores["shots"]["all"]
        assert scores["probe_top1"] == all_shots["top1"] == np.mean([fit["top1"] for fit in all_shots["fits"]])
        assert scores["probe_top1_sd"] == np.std([fit["top1"] for fit in all_shots["fits"]], ddof=1)
        low, high = scores["intervals"]["probe_top1"]
        assert low <= scores["probe_top1"] <= high
        assert [fit["seed"] for fit in scores["shots"]["2"]["fits"]] == [0, 1]

    with open(experiment / "summary.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [(row["model"], row["dataset"], row["task"]) for row in rows] == [
        (model, dataset, task)
        for model in ("first", "second")
        for dataset, task in (("shapes-probe", "probe"), ("shapes-zero-shot", "classification"))
    ] + [("given", "shapes-probe", "probe")]
    assert all((row["probe_top1"] != "") == (row["task"] == "probe") for row in rows)
    summary = (experiment / "summary.md").read_text()
    assert "### Linear probe by shots" in summary and "| first | shapes-probe | 2 |" in summary
    page = (experiment / "report/results.html").read_text()
    assert "Linear probe by shots" in page and "shapes-probe: 2-shot" in page
    suite = json.loads((experiment / "suites/shapes.json").read_text())
    assert suite["metrics"] == {"shapes-zero-shot": "top1", "shapes-probe": "probe_top1"}
    comparison = json.loads((experiment / "comparisons/shapes-probe.json").read_text())["comparisons"][0]
    first = json.loads((experiment / "scores/first/shapes-probe/probe.json").read_text())
    second = json.loads((experiment / "scores/second/shapes-probe/probe.json").read_text())
    assert comparison["difference"]["probe_top1"] == pytest.approx(first["probe_top1"] - second["probe_top1"])

    config = yaml.safe_load((workdir / "config/config.yaml").read_text())
    config["probe"]["seeds"] = 3
    (workdir / "config/config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    assert planned_jobs(workdir) == {
        "score_probe": 3,
        "compare_models": 1,
        "plot_comparisons": 1,
        "plot_probe": 1,
        "score_suite": 1,
        "plot_suite": 1,
        "summary": 1,
        "report_tables": 1,
        "all": 1,
    }


@pytest.mark.workflow
def test_a_train_split_too_small_for_its_shots_ends_the_run_in_a_line_naming_its_dataset(tmp_path):
    """Class counts are known only once the train split is prepared, so the probe's job finds too few images of a
    class: the run ends with that job's one line, naming the config's key and the dataset it names."""
    from clipeval.data.sources.shapes import CLASSNAMES, generate_shapes

    workdir = copy_workflow(tmp_path / "workflow")
    write_class_features(workdir / "given/train.jsonl", 12, 5)
    write_class_features(workdir / "given/test.jsonl", 12, 6)
    datasets = {name: dict(CONFIG["datasets"][name], num_images=12) for name in ("shapes-train", "shapes-probe")}
    config = {
        "experiment": "probing",
        "datasets": datasets,
        "models": {"given": CONFIG["models"]["given"]},
        "probe": {"shots": [4], "seeds": 1, "regularization": [0.001, 0.1]},
    }
    (workdir / "config/config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = snakemake(workdir, "--cores", "2")

    labels = [label for _, label in generate_shapes(12, 5)[2]]
    short = next(label for label in range(len(CLASSNAMES)) if labels.count(label) < 5)  # the first class checked
    summary = [line for line in result.stderr.splitlines() if line.startswith("failed: ")]
    assert result.returncode == 1 and len(summary) == 1, result.stderr[-3000:]
    assert summary[0].startswith("failed: score_probe (logs/")
    assert summary[0].endswith(
        f"clipeval: error: datasets.shapes-probe.train_split (shapes-train): class {CLASSNAMES[short]!r} has"
        f" {labels.count(short)} images, fewer than the 5 that 4-shot probing needs (4 to fit on and at least one"
        " to choose the regularisation)"
    )
