"""The linear probe's parts: the solver against scikit-learn, its bits under one and two BLAS threads, the draws
of the few-shot protocol, hand-computed scores and spreads, paired comparisons, and the config's and command's
one-line errors."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_planning import plan_of

from clipeval.comparison import compare_models
from clipeval.errors import ClipevalError
from clipeval.planning.checks import check_references
from clipeval.planning.plan import ConfigError
from clipeval.probe.logistic import fit_logistic
from clipeval.probe.metrics import probe_samples, probe_statistic, score_probe
from clipeval.probe.protocol import ALL, Fit, ProbeSettings, few_shot_split, probe_fits, validation_split

REPO = Path(__file__).resolve().parents[1]


def clustered(count, dimension=12, classes=4, spread=1.2, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(99).normal(size=(classes, dimension))
    labels = rng.integers(0, classes, count)
    features = centres[labels] + spread * rng.normal(size=(count, dimension))
    return features / np.linalg.norm(features, axis=1, keepdims=True), labels


@pytest.mark.parametrize("l2", [1e-1, 1e-2, 1e-3])
def test_the_solver_finds_scikit_learn_s_minimiser(l2):
    from sklearn.linear_model import LogisticRegression

    features, labels = clustered(400)
    test_features, _ = clustered(200, seed=1)
    mine = fit_logistic(features, labels, 4, l2)
    reference = LogisticRegression(C=1 / (l2 * len(labels)), tol=1e-12, max_iter=100_000).fit(features, labels)
    assert np.abs(mine.weights - reference.coef_.T).max() < 1e-5
    # The bias is defined up to a constant shared by every class (softmax does not see it).
    assert np.ptp(mine.bias - reference.intercept_) < 1e-5
    assert (mine.predict(test_features) == reference.predict(test_features)).all()


FIT_BYTES = """
import hashlib, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from test_probe import clustered
from clipeval.probe.logistic import fit_logistic
features, labels = clustered(3000, dimension=512, classes=10)
fitted = fit_logistic(features, labels, 10, 1e-4, max_iterations=30)
print(hashlib.sha256(fitted.weights.tobytes() + fitted.bias.tobytes()).hexdigest())
"""


@pytest.mark.parametrize(
    "settings",
    [
        [("1", "Haswell"), ("2", "Haswell")],
        # The kernels score-probe pins, as an Intel CPU with AVX2 and an AMD one run them.
        [("2", "Haswell"), ("2", "Zen")],
    ],
    ids=["threads", "cpu vendors"],
)
@pytest.mark.slow  # a probe fitted in new interpreters, one per setting
def test_a_fit_has_the_same_bits_under_one_and_two_blas_threads_and_on_either_vendor(settings):
    digests = set()
    for threads, kernels in settings:
        env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
        env["OPENBLAS_CORETYPE"] = kernels
        result = subprocess.run(
            [sys.executable, "-c", FIT_BYTES, str(REPO / "tests")], env=env, capture_output=True, text=True, check=True
        )
        digests.add(result.stdout.strip())
    assert len(digests) == 1


def test_few_shot_draws_k_a_class_and_up_to_k_more_to_validate_on():
    labels = np.array([0] * 5 + [1] * 3 + [2] * 9)
    names = ["a", "b", "c"]
    train, validation = few_shot_split(labels, 3, 2, True, np.random.default_rng(0), names, "labels.jsonl")
    assert sorted(labels[train]) == [0, 0, 1, 1, 2, 2]
    assert sorted(labels[validation]) == [0, 0, 1, 2, 2]  # class b has one image left over
    assert not set(train) & set(validation)
    again = few_shot_split(labels, 3, 2, True, np.random.default_rng(0), names, "labels.jsonl")
    assert [list(part) for part in again] == [list(train), list(validation)]
    with pytest.raises(ClipevalError) as raised:
        few_shot_split(labels, 3, 3, True, np.random.default_rng(0), names, "train/labels.jsonl")
    assert str(raised.value) == (
        "train/labels.jsonl: class 'b' has 3 images, fewer than the 4 that 3-shot probing needs (3 to fit on and"
        " at least one to choose the regularisation)"
    )


def test_all_holds_out_a_share_of_the_train_split():
    from clipeval.commands.score_probe import shots_value

    assert shots_value(ALL) == ALL  # the command spells it without importing the protocol
    train, validation = validation_split(10, 0.2, np.random.default_rng(3), "labels.jsonl")
    assert len(validation) == 2 and sorted([*train, *validation]) == list(range(10))
    train, validation = validation_split(2, 0.2, np.random.default_rng(3), "labels.jsonl")
    assert len(train) == len(validation) == 1


def test_all_with_a_grid_refuses_a_train_split_of_one_image():
    features, labels = clustered(8)
    settings = ProbeSettings((ALL,), 1, 0.2, (1e-3, 1e-1))
    with pytest.raises(ClipevalError) as raised:
        probe_fits(features[:1], labels[:1], features, 4, settings, list("abcd"), "train/labels.jsonl")
    assert str(raised.value) == (
        "train/labels.jsonl: the train split has 1 image, fewer than the 2 that probing on all of it needs (1 to fit"
        " on and at least one to choose the regularisation)"
    )
    one_value = ProbeSettings((ALL,), 1, 0.2, (1e-1,))
    assert len(probe_fits(features[:1], labels[:1], features, 4, one_value, list("abcd"), "l")[ALL]) == 1


def test_draws_follow_the_seed_and_shots_alone():
    features, labels = clustered(120)
    settings = ProbeSettings((2, ALL), 2, 0.2, (1e-3, 1e-1))
    fits = probe_fits(features, labels, features[:10], 4, settings, list("abcd"), "l")
    fewer = probe_fits(features, labels, features[:10], 4, ProbeSettings((2,), 1, 0.2, (1e-3, 1e-1)), list("abcd"), "l")
    assert list(fits["2"][0].fitted_on) == list(fewer["2"][0].fitted_on)
    assert list(fits["2"][0].fitted_on) != list(fits["2"][1].fitted_on)
    assert len(fits[ALL][0].fitted_on) == 120 and len(fits[ALL][0].validated_on) == 24


def fit(seed, predictions):
    return Fit(seed, 0.1, None, np.array(predictions), np.array([0]), np.array([], dtype=np.int64))


def test_scores_by_hand():
    labels = np.array([0, 0, 0, 1])
    fits = {"1": [fit(0, [0, 0, 0, 0]), fit(1, [0, 1, 1, 1])], ALL: [fit(0, [0, 0, 0, 1]), fit(1, [0, 0, 0, 1])]}
    settings = ProbeSettings((1, ALL), 2, 0.2, (0.1,))
    metrics, record = score_probe(fits, [7, 8, 9, 10], labels, 2, np.array([3]), settings, 0, 0)
    # 1-shot: seed 0 is right on 3 of 4 (class 0: 3/3, class 1: 0/1), seed 1 on 2 of 4 (1/3 and 1/1).
    one = metrics["shots"]["1"]
    assert one["top1"] == pytest.approx(62.5) and one["top1_sd"] == pytest.approx(np.sqrt(2 * 12.5**2))
    assert one["mean_per_class_recall"] == pytest.approx(np.mean([50, 100 * (1 / 3 + 1) / 2]))
    assert metrics["headline_shots"] == ALL and metrics["probe_top1"] == 100 and metrics["probe_top1_sd"] == 0
    assert probe_statistic(["1", ALL], 2, 2)(probe_samples(record))["shots"]["1"]["top1"] == pytest.approx(62.5)
    assert metrics["counts"] == {"images": 4, "train_images": 1, "classes": 2}


def test_a_paired_comparison_of_probes_resamples_the_same_test_images():
    labels = np.array([0, 1] * 10)
    settings = ProbeSettings((ALL,), 1, 0.2, (0.1,))
    _, better = score_probe({ALL: [fit(0, labels)]}, range(20), labels, 2, np.array([1]), settings, 0, 0)
    _, worse = score_probe({ALL: [fit(0, [0] * 20)]}, range(20), labels, 2, np.array([1]), settings, 0, 0)
    result = compare_models(("better", "worse"), better, worse, "worse.json", replicates=50, seed=1)
    assert result["difference"]["probe_top1"] == 50
    low, high = result["intervals"]["probe_top1"]
    assert 0 < low <= 50 <= high
    with pytest.raises(ClipevalError, match="worse.json: its images or shots differ"):
        compare_models(("a", "b"), better, {**worse, "shots": ["1"]}, "worse.json")


def with_probe(change):
    def changed(config):
        config["datasets"]["cifar-train"] = {
            "format": "cifar",
            "task": "probe_train",
            "batch": "b/data_batch_1",
            "templates": "t.txt",
        }
        config["datasets"]["cifar-probe"] = {
            **config["datasets"]["cifar"],
            "task": "probe",
            "train_split": "cifar-train",
        }
        change(config)

    return changed


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda c: c["datasets"]["cifar-probe"].pop("train_split"),
            "datasets.cifar-probe.train_split: a probe dataset names the dataset its classifier is fitted on",
        ),
        (
            lambda c: c["datasets"]["cifar-probe"].update(train_split="nowhere"),
            "datasets.cifar-probe.train_split: unknown dataset 'nowhere' (known: train, flickr, coco, cifar,"
            " cifar-train, cifar-probe)",
        ),
        (
            lambda c: c["datasets"]["cifar-probe"].update(train_split="flickr"),
            "datasets.cifar-probe.train_split: dataset 'flickr' has task 'retrieval'; a train split is a"
            " classification dataset (classification or probe_train)",
        ),
        (
            lambda c: c["datasets"]["cifar"].update(train_split="cifar-train"),
            "datasets.cifar.train_split: only a dataset of task probe names a train split",
        ),
        (
            lambda c: c["models"]["given"]["features"].update({"cifar-probe": {"images": "p.jsonl"}}),
            "models.given.features.cifar-probe: a probe dataset needs features of its train split 'cifar-train' too",
        ),
    ],
)
def test_a_probe_s_references_are_checked_with_one_line(change, message):
    with pytest.raises(ConfigError) as raised:
        check_references(plan_of(with_probe(change)))
    assert str(raised.value) == message


def test_a_probe_train_split_is_extracted_not_scored():
    plan = plan_of(with_probe(lambda c: None))
    pairs = plan.evaluation_pairs()
    assert ("b32", "cifar-probe") in pairs and ("b32", "cifar-train") not in pairs
    assert plan.dataset_keys["cifar-probe"] == plan.dataset_keys["cifar"]  # one prepared dataset, one extraction
    assert (
        plan.extracted_pairs().index(("b32", "cifar-train")) == plan.extracted_pairs().index(("b32", "cifar-probe")) + 1
    )


def write_split(folder, classnames, labels, features):
    folder.mkdir(parents=True)
    (folder / "classes.json").write_text(json.dumps({"classnames": classnames, "templates": ["a {}"]}))
    with open(folder / "labels.jsonl", "w") as handle:
        handle.writelines(json.dumps({"image_id": i, "label": int(label)}) + "\n" for i, label in enumerate(labels))
    with open(folder / "images.jsonl", "w") as handle:
        handle.writelines(json.dumps({"image_id": i, "feature": row.tolist()}) + "\n" for i, row in enumerate(features))


def score_probe_command(tmp_path, *shots, env=None):
    words = ["score-probe"]
    for role, folder in (("train-", tmp_path / "train"), ("", tmp_path / "test")):
        words += [f"--{role}labels", folder / "labels.jsonl", f"--{role}classes", folder / "classes.json"]
        words += ["--train-feats" if role else "--image-feats", folder / "images.jsonl"]
    words += ["--shots", *shots, "--seeds", "2", "--validation", "0.2", "--regularization", "0.01", "0.1"]
    words += ["--bootstrap", "20", "--output", tmp_path / "probe.json", "--ranks-output", tmp_path / "ranks.json"]
    return subprocess.run(
        [sys.executable, "-m", "clipeval", *map(str, words)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.slow
def test_the_command_scores_a_probe_and_refuses_splits_that_do_not_match(tmp_path):
    features, labels = clustered(60, classes=3)
    write_split(tmp_path / "train", ["a", "b", "c"], labels[:40], features[:40])
    write_split(tmp_path / "test", ["a", "b", "c"], labels[40:], features[40:])
    # OpenBLAS told to use other kernels: the command holds it to the AVX2 ones every machine runs alike.
    result = score_probe_command(tmp_path, "2", "all", env={"OPENBLAS_CORETYPE": "Sandybridge"})
    assert result.returncode == 0, result.stderr
    metrics = json.loads((tmp_path / "probe.json").read_text())
    assert list(metrics["shots"]) == ["2", "all"] and metrics["counts"]["train_images"] == 40
    assert metrics["settings"]["blas_kernels"] == "Haswell"

    (tmp_path / "probe.json").unlink()
    result = score_probe_command(tmp_path, "30")
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"clipeval: error: {tmp_path / 'train/labels.jsonl'}: class ")
    assert not (tmp_path / "probe.json").exists()

    (tmp_path / "train/classes.json").write_text(json.dumps({"classnames": ["a", "b", "d"], "templates": ["{}"]}))
    result = score_probe_command(tmp_path, "all")
    assert result.returncode == 1
    assert result.stderr == (
        f"clipeval: error: {tmp_path / 'train/classes.json'}: its class names differ from the test split's"
        f" ({tmp_path / 'test/classes.json'})\n"
    )


def test_the_train_split_is_named_by_its_config_key_not_its_hashed_folder():
    """'too few images per class' named results/datasets/<hash>/labels.jsonl; the job is given the config."""
    import json

    from clipeval.commands.score_probe import train_split_named

    config = json.dumps({"dataset": {"name": "cifar10", "task": "probe", "train_split": "cifar10-train"}})
    assert train_split_named(config, "results/datasets/0a1b/labels.jsonl") == (
        "datasets.cifar10.train_split (cifar10-train)"
    )
    assert train_split_named(None, "results/datasets/0a1b/labels.jsonl") == "results/datasets/0a1b/labels.jsonl"
