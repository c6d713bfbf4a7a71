"""Each subcommand as a user runs it: exit codes, one-line errors, output formats."""

import json

import numpy as np
import pytest
from conftest import run_cli

# Each test reads the output of one chain of commands run as a user would (the `chain` fixture, tens of
# seconds): make test-fast leaves the file out.
pytestmark = [pytest.mark.slow, pytest.mark.minutes(3)]


def read_lines(path):
    return [json.loads(line) for line in open(path)]


@pytest.fixture(scope="module")
def chain(tmp_path_factory, tiny_checkpoint):
    """prepare shapes → extract-features → make-topk-predictions ×2 → score-retrieval → summarize."""
    root = tmp_path_factory.mktemp("chain")
    steps = [
        ("prepare", "shapes", "--num-images", 30, "--seed", 2, "--first-image-id", 500, "--out", root / "data"),
        (
            "extract-features",
            "--arch",
            "clipeval-tiny",
            "--pretrained",
            tiny_checkpoint,
            "--images",
            root / "data/images.lmdb",
            "--texts",
            root / "data/texts.jsonl",
            "--image-output",
            root / "feats/images.jsonl",
            "--text-output",
            root / "feats/texts.jsonl",
            "--num-workers",
            2,
            "--batch-size",
            8,
            "--device",
            "cpu",
        ),
        ("describe-model", "--arch", "clipeval-tiny", "--pretrained", tiny_checkpoint, "--output", root / "model.json"),
        (
            "make-topk-predictions",
            "--image-feats",
            root / "feats/images.jsonl",
            "--text-feats",
            root / "feats/texts.jsonl",
            "--top-k",
            10,
            "--direction",
            "t2i",
            "--output",
            root / "pred/t2i.jsonl",
        ),
        (
            "make-topk-predictions",
            "--image-feats",
            root / "feats/images.jsonl",
            "--text-feats",
            root / "feats/texts.jsonl",
            "--top-k",
            10,
            "--direction",
            "i2t",
            "--output",
            root / "pred/i2t.jsonl",
        ),
        (
            "score-retrieval",
            "--texts",
            root / "data/texts.jsonl",
            "--image-feats",
            root / "feats/images.jsonl",
            "--text-feats",
            root / "feats/texts.jsonl",
            "--t2i",
            root / "pred/t2i.jsonl",
            "--i2t",
            root / "pred/i2t.jsonl",
            "--dataset-meta",
            root / "data/meta.json",
            "--model-meta",
            root / "model.json",
            "--config",
            '{"knn": {"top_k": 10}}',
            "--bootstrap",
            200,
            "--ranks-output",
            root / "scores/retrieval-ranks.json",
            "--output",
            root / "scores/retrieval.json",
        ),
        (
            "summarize",
            "--entry",
            "tiny",
            "small",
            root / "scores/retrieval.json",
            "--csv",
            root / "summary.csv",
            "--markdown",
            root / "summary.md",
            "--averages",
            root / "averages.csv",
            "--comparisons",
            root / "comparisons.csv",
            "--series",
            root / "series.csv",
        ),
    ]
    for step in steps:
        result = run_cli(*step)
        assert result.returncode == 0, (step[0], result.stderr)
    return root


def test_make_shapes_writes_the_design_formats(chain):
    rows = read_lines(chain / "data/texts.jsonl")
    assert len(rows) == 150 and set(rows[0]) == {"text_id", "text", "image_ids"}
    meta = json.loads((chain / "data/meta.json").read_text())
    assert meta["counts"] == {"images": 30, "texts": 150, "images_without_caption": 0}
    assert meta["checksum"].startswith("sha256:")


def test_features_are_unit_norm_jsonl(chain):
    images = read_lines(chain / "feats/images.jsonl")
    texts = read_lines(chain / "feats/texts.jsonl")
    assert [r["image_id"] for r in images] == list(range(500, 530))
    assert len(texts) == 150 and set(texts[0]) == {"text_id", "feature"}
    norms = np.linalg.norm([r["feature"] for r in images + texts], axis=1)
    assert np.allclose(norms, 1, atol=1e-5)
    meta = json.loads((chain / "model.json").read_text())
    assert meta["arch"] == "clipeval-tiny" and meta["weights"].startswith("sha256:") and meta["precision"] == "fp32"


def independent_ranking(chain):
    images = read_lines(chain / "feats/images.jsonl")
    texts = read_lines(chain / "feats/texts.jsonl")
    image_ids = [r["image_id"] for r in images]
    text_ids = [r["text_id"] for r in texts]
    scores = (
        np.array([r["feature"] for r in texts], dtype=np.float64)
        @ np.array([r["feature"] for r in images], dtype=np.float64).T
    )
    t2i = {
        t: [image_ids[j] for j in sorted(range(len(image_ids)), key=lambda j: (-scores[i, j], image_ids[j]))]
        for i, t in enumerate(text_ids)
    }
    i2t = {
        im: [text_ids[i] for i in sorted(range(len(text_ids)), key=lambda i: (-scores[i, j], text_ids[i]))]
        for j, im in enumerate(image_ids)
    }
    return t2i, i2t


def test_predictions_are_the_exact_top_10_both_ways(chain):
    t2i, i2t = independent_ranking(chain)
    for row in read_lines(chain / "pred/t2i.jsonl"):
        assert row["image_ids"] == t2i[row["text_id"]][:10]
        assert row["scores"] == sorted(row["scores"], reverse=True)
    assert {row["image_id"]: row["text_ids"] for row in read_lines(chain / "pred/i2t.jsonl")} == {
        image: ranked[:10] for image, ranked in i2t.items()
    }


def test_scores_match_recall_computed_from_the_features(chain):
    t2i, i2t = independent_ranking(chain)
    captions = read_lines(chain / "data/texts.jsonl")
    images_of = {c["text_id"]: set(c["image_ids"]) for c in captions}
    texts_of = {}
    for c in captions:
        for image in c["image_ids"]:
            texts_of.setdefault(image, set()).add(c["text_id"])
    metrics = json.loads((chain / "scores/retrieval.json").read_text())
    for k in (1, 5, 10):
        expected_t2i = 100 * np.mean([bool(set(t2i[t][:k]) & images_of[t]) for t in t2i])
        expected_i2t = 100 * np.mean([bool(set(i2t[i][:k]) & texts_of[i]) for i in i2t])
        assert metrics["t2i"][f"R@{k}"] == pytest.approx(expected_t2i)
        assert metrics["i2t"][f"R@{k}"] == pytest.approx(expected_i2t)
    assert metrics["rsum"] == pytest.approx(sum(metrics[d][f"R@{k}"] for d in ("t2i", "i2t") for k in (1, 5, 10)))
    for direction, ranking, positives in (("t2i", t2i, images_of), ("i2t", i2t, texts_of)):
        ranks = [1 + min(ranked.index(p) for p in positives[q]) for q, ranked in ranking.items()]
        assert metrics[direction]["mean_rank"] == pytest.approx(np.mean(ranks))
        assert metrics[direction]["median_rank"] == pytest.approx(np.median(ranks))
        low, high = metrics["intervals"][direction]["R@5"]
        assert low <= metrics[direction]["R@5"] <= high
    assert metrics["counts"]["texts"] == 150 and metrics["counts"]["images"] == 30
    provenance = metrics["provenance"]
    assert provenance["config"] == {"knn": {"top_k": 10}}
    assert provenance["dataset"]["checksum"].startswith("sha256:")
    assert provenance["model"]["weights"].startswith("sha256:")
    assert {"torch", "open_clip_torch", "numpy"} <= set(provenance["versions"])


def test_summary_has_the_row(chain):
    lines = (chain / "summary.csv").read_text().splitlines()
    assert len(lines) == 2 and lines[1].startswith("tiny,small,retrieval,")


def test_outputs_are_byte_identical_when_rerun(chain, tmp_path):
    for direction in ("t2i", "i2t"):
        result = run_cli(
            "make-topk-predictions",
            "--image-feats",
            chain / "feats/images.jsonl",
            "--text-feats",
            chain / "feats/texts.jsonl",
            "--direction",
            direction,
            "--output",
            tmp_path / f"{direction}.jsonl",
        )
        assert result.returncode == 0
        assert (tmp_path / f"{direction}.jsonl").read_bytes() == (chain / f"pred/{direction}.jsonl").read_bytes()


def assert_one_line_error(result, expected, *absent):
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [f"clipeval: error: {expected}"]
    for path in absent:
        assert not path.exists(), path


def test_extract_with_unknown_arch(chain, tmp_path):
    result = run_cli(
        "extract-features",
        "--arch",
        "ViT-Nope",
        "--images",
        chain / "data/images.lmdb",
        "--texts",
        chain / "data/texts.jsonl",
        "--image-output",
        tmp_path / "i.jsonl",
        "--text-output",
        tmp_path / "t.jsonl",
    )
    assert_one_line_error(
        result,
        "unknown open_clip arch 'ViT-Nope' (see open_clip.list_models())",
        tmp_path / "i.jsonl",
        tmp_path / "t.jsonl",
    )


def test_extract_with_missing_checkpoint(chain, tmp_path):
    result = run_cli(
        "extract-features",
        "--arch",
        "clipeval-tiny",
        "--pretrained",
        tmp_path / "gone.pt",
        "--images",
        chain / "data/images.lmdb",
        "--texts",
        chain / "data/texts.jsonl",
        "--image-output",
        tmp_path / "i.jsonl",
        "--text-output",
        tmp_path / "t.jsonl",
    )
    assert_one_line_error(
        result, f"{tmp_path / 'gone.pt'}: checkpoint file not found (model arch clipeval-tiny)", tmp_path / "i.jsonl"
    )


def knn_cli(image_feats, text_feats, output):
    return run_cli(
        "make-topk-predictions",
        "--image-feats",
        image_feats,
        "--text-feats",
        text_feats,
        "--direction",
        "t2i",
        "--output",
        output,
    )


def test_knn_with_mismatched_dimensions(chain, tmp_path):
    (tmp_path / "t.jsonl").write_text('{"text_id": 1, "feature": [1.0, 0.0]}\n')
    result = knn_cli(chain / "feats/images.jsonl", tmp_path / "t.jsonl", tmp_path / "p.jsonl")
    assert_one_line_error(
        result,
        f"{chain / 'feats/images.jsonl'} has 64-dimensional features but {tmp_path / 't.jsonl'} has 2",
        tmp_path / "p.jsonl",
    )


def test_score_with_a_missing_prediction(chain, tmp_path):
    lines = (chain / "pred/t2i.jsonl").read_text().splitlines()
    (tmp_path / "t2i.jsonl").write_text("\n".join(lines[1:]) + "\n")
    result = score_cli(chain, tmp_path, "--t2i", tmp_path / "t2i.jsonl", "--i2t", chain / "pred/i2t.jsonl")
    first = json.loads(lines[0])["text_id"]
    assert_one_line_error(
        result,
        f"{tmp_path / 't2i.jsonl'}: no prediction for text_id {first} (1 missing)",
        tmp_path / "s.json",
        tmp_path / "ranks.json",
    )


def score_cli(chain, tmp_path, *options, image_feats=None):
    return run_cli(
        "score-retrieval",
        "--texts",
        chain / "data/texts.jsonl",
        "--image-feats",
        image_feats or chain / "feats/images.jsonl",
        "--text-feats",
        chain / "feats/texts.jsonl",
        *options,
        "--ranks-output",
        tmp_path / "ranks.json",
        "--output",
        tmp_path / "s.json",
    )


def test_score_with_predictions_from_other_features(chain, tmp_path):
    images_of = {c["text_id"]: c["image_ids"] for c in read_lines(chain / "data/texts.jsonl")}
    rows = read_lines(chain / "pred/t2i.jsonl")
    row = next(
        r
        for r in rows
        if set(r["image_ids"][1:]) & set(images_of[r["text_id"]]) and r["image_ids"][0] not in images_of[r["text_id"]]
    )
    hit = next(i for i in row["image_ids"] if i in images_of[row["text_id"]])
    row["image_ids"] = [hit] + [i for i in row["image_ids"] if i != hit]  # as if it ranked first
    (tmp_path / "t2i.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = score_cli(chain, tmp_path, "--t2i", tmp_path / "t2i.jsonl", "--i2t", chain / "pred/i2t.jsonl")
    assert result.returncode == 1
    assert result.stderr.startswith(
        f"clipeval: error: {tmp_path / 't2i.jsonl'}: text_id {row['text_id']}: the features rank its first positive at "
    )
    assert "the predictions have it at position 1" in result.stderr
    assert result.stderr.strip().endswith("(were they made from these features?)")
    assert not (tmp_path / "s.json").exists() and not (tmp_path / "ranks.json").exists()


def perturbed_features(chain, path, scale, seed):
    """A second 'model': the chain's image features plus noise, re-normalised."""
    rows = read_lines(chain / "feats/images.jsonl")
    rng = np.random.default_rng(seed)
    with open(path, "w") as handle:
        for row in rows:
            feature = np.array(row["feature"]) + scale * rng.normal(size=len(row["feature"]))
            handle.write(
                json.dumps({"image_id": row["image_id"], "feature": (feature / np.linalg.norm(feature)).tolist()})
                + "\n"
            )


def noisy_ranks(chain, tmp_path, name, scale, seed):
    """A model whose image features are the chain's plus noise: (its metrics, its ranks record)."""
    perturbed_features(chain, tmp_path / f"{name}.jsonl", scale, seed)
    result = score_cli(chain, tmp_path, "--bootstrap", 200, image_feats=tmp_path / f"{name}.jsonl")
    assert result.returncode == 0, result.stderr
    (tmp_path / "ranks.json").rename(tmp_path / f"{name}-ranks.json")
    return json.loads((tmp_path / "s.json").read_text()), tmp_path / f"{name}-ranks.json"


def assert_difference(comparison, first, second):
    for direction in ("t2i", "i2t"):
        for metric in ("R@1", "R@5", "mean_rank", "median_rank"):
            expected = first[direction][metric] - second[direction][metric]
            assert comparison["difference"][direction][metric] == pytest.approx(expected)
            low, high = comparison["intervals"][direction][metric]
            assert low <= expected + 1e-9 and expected - 1e-9 <= high
    assert comparison["difference"]["rsum"] == pytest.approx(first["rsum"] - second["rsum"])


def test_paired_comparison_of_two_models(chain, tmp_path):
    second, second_ranks = noisy_ranks(chain, tmp_path, "noisy", 0.3, 0)
    result = run_cli(
        "compare-models",
        chain / "scores/retrieval-ranks.json",
        second_ranks,
        "--names",
        "tiny",
        "noisy",
        "--dataset",
        "small",
        "--bootstrap",
        200,
        "--output",
        tmp_path / "c.json",
    )
    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "c.json").read_text())
    assert record["dataset"] == "small" and record["baseline"] is None
    [comparison] = record["comparisons"]
    assert comparison["models"] == ["tiny", "noisy"]
    first = json.loads((chain / "scores/retrieval.json").read_text())
    assert_difference(comparison, first, second)
    # The K values the comparison's tables are laid out by, as data: the score file's.
    assert (comparison["recall_at"], comparison["ranking_at"]) == (first["recall_at"], first["ranking_at"])


def test_one_job_compares_every_two_models_or_each_with_a_baseline(chain, tmp_path):
    tiny = json.loads((chain / "scores/retrieval.json").read_text())
    noisy, noisy_ranks_path = noisy_ranks(chain, tmp_path, "noisy", 0.3, 0)
    noisier, noisier_ranks_path = noisy_ranks(chain, tmp_path, "noisier", 0.6, 1)
    metrics = {"tiny": tiny, "noisy": noisy, "noisier": noisier}
    ranks = [chain / "scores/retrieval-ranks.json", noisy_ranks_path, noisier_ranks_path]
    names = ["tiny", "noisy", "noisier"]
    for baseline, pairs in (
        (None, [("tiny", "noisy"), ("tiny", "noisier"), ("noisy", "noisier")]),
        ("noisy", [("tiny", "noisy"), ("noisier", "noisy")]),
    ):
        result = run_cli(
            "compare-models",
            *ranks,
            "--names",
            *names,
            *(["--baseline", baseline] if baseline else []),
            "--dataset",
            "small",
            "--bootstrap",
            200,
            "--output",
            tmp_path / "c.json",
        )
        assert result.returncode == 0, result.stderr
        record = json.loads((tmp_path / "c.json").read_text())
        assert record["baseline"] == baseline
        assert [tuple(c["models"]) for c in record["comparisons"]] == pairs
        for comparison in record["comparisons"]:
            assert_difference(comparison, *(metrics[name] for name in comparison["models"]))


def test_a_baseline_must_be_compared(chain, tmp_path):
    result = run_cli(
        "compare-models",
        chain / "scores/retrieval-ranks.json",
        chain / "scores/retrieval-ranks.json",
        "--names",
        "a",
        "b",
        "--baseline",
        "c",
        "--dataset",
        "small",
        "--output",
        tmp_path / "c.json",
    )
    assert_one_line_error(result, "baseline 'c' is not among the compared models (a, b)", tmp_path / "c.json")


def test_paired_comparison_needs_the_same_queries(chain, tmp_path):
    record = json.loads((chain / "scores/retrieval-ranks.json").read_text())
    record["t2i"]["query_ids"][0] += 10_000
    (tmp_path / "other.json").write_text(json.dumps(record))
    result = run_cli(
        "compare-models",
        chain / "scores/retrieval-ranks.json",
        tmp_path / "other.json",
        "--names",
        "a",
        "b",
        "--dataset",
        "small",
        "--output",
        tmp_path / "c.json",
    )
    assert_one_line_error(
        result,
        f"{tmp_path / 'other.json'}: its t2i queries differ from the first model's;"
        " a paired comparison needs the same queries",
        tmp_path / "c.json",
    )


def test_compare_models_refuses_a_file_that_is_not_a_ranks_record(chain, tmp_path):
    result = run_cli(
        "compare-models",
        chain / "scores/retrieval-ranks.json",
        chain / "scores/retrieval.json",
        "--names",
        "a",
        "b",
        "--dataset",
        "small",
        "--output",
        tmp_path / "c.json",
    )
    assert_one_line_error(
        result,
        f"{chain / 'scores/retrieval.json'}: not a ranks record (the score commands write one with --ranks-output)",
        tmp_path / "c.json",
    )


def test_folds_protocol_cannot_check_full_gallery_predictions(chain, tmp_path):
    result = score_cli(
        chain, tmp_path, "--protocol", "folds-1k", "--t2i", chain / "pred/t2i.jsonl", "--i2t", chain / "pred/i2t.jsonl"
    )
    assert_one_line_error(
        result,
        "--t2i/--i2t rank over the whole gallery; protocol folds-1k ranks within folds,"
        " so they cannot be checked: leave them out",
        tmp_path / "s.json",
        tmp_path / "ranks.json",
    )


def test_folds_protocol_needs_whole_folds(chain, tmp_path):
    result = score_cli(chain, tmp_path, "--protocol", "folds-1k")
    assert_one_line_error(
        result,
        f"{chain / 'feats/images.jsonl'}: protocol folds-1k needs a multiple of 1000 images, there are 30",
        tmp_path / "s.json",
    )


def test_evaluate_is_chinese_clip_compatible(chain, tmp_path):
    captions = read_lines(chain / "data/texts.jsonl")
    metrics = json.loads((chain / "scores/retrieval.json").read_text())
    result = run_cli("evaluate", chain / "data/texts.jsonl", chain / "pred/t2i.jsonl", tmp_path / "t2i.json")
    assert result.returncode == 0, result.stderr
    output = json.loads((tmp_path / "t2i.json").read_text())
    recall = metrics["t2i"]
    mean_recall = (recall["R@1"] + recall["R@5"] + recall["R@10"]) / 3
    assert output["success"] is True and output["score"] == pytest.approx(mean_recall)
    assert output["scoreJson"] == pytest.approx(
        {
            "score": mean_recall,
            "mean_recall": mean_recall,
            "r1": recall["R@1"],
            "r5": recall["R@5"],
            "r10": recall["R@10"],
        }
    )
    # i2t ground truth in Chinese-CLIP's transformed form: {"image_id", "text_ids"}.
    texts_of = {}
    for caption in captions:
        for image_id in caption["image_ids"]:
            texts_of.setdefault(image_id, []).append(caption["text_id"])
    (tmp_path / "gt.tr.jsonl").write_text(
        "".join(json.dumps({"image_id": i, "text_ids": t}) + "\n" for i, t in texts_of.items())
    )
    for ground_truth in (tmp_path / "gt.tr.jsonl", chain / "data/texts.jsonl"):
        result = run_cli(
            "evaluate", ground_truth, chain / "pred/i2t.jsonl", tmp_path / "i2t.json", "--direction", "i2t"
        )
        assert result.returncode == 0, result.stderr
        output = json.loads((tmp_path / "i2t.json").read_text())
        assert output["scoreJson"]["r5"] == pytest.approx(metrics["i2t"]["R@5"])
        assert output["scoreJson"]["mean_recall"] == pytest.approx(metrics["i2t"]["mean_recall"])


def test_evaluate_refuses_bad_input_naming_the_query(chain, tmp_path):
    rows = read_lines(chain / "pred/t2i.jsonl")
    for name, change, expected in (
        ("short", lambda r: r.update(image_ids=r["image_ids"][:5]), "text_id {id} has 5 predictions, R@10 needs 10"),
        ("repeat", lambda r: r.update(image_ids=[r["image_ids"][0]] * 10), "text_id {id} lists image_id {first} twice"),
    ):
        changed = [dict(row) for row in rows]
        change(changed[2])
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(row) + "\n" for row in changed))
        result = run_cli("evaluate", chain / "data/texts.jsonl", path, tmp_path / "out.json")
        where = f"{path}:3: " if name == "repeat" else f"{path}: "
        assert_one_line_error(
            result, where + expected.format(id=rows[2]["text_id"], first=rows[2]["image_ids"][0]), tmp_path / "out.json"
        )


def test_train_subcommand(tmp_path, shapes_dataset):
    result = run_cli(
        "train",
        "--arch",
        "clipeval-tiny",
        "--dataset",
        shapes_dataset,
        "--output",
        tmp_path / "ck.pt",
        "--epochs",
        1,
        "--batch-size",
        20,
        "--lr",
        "1e-3",
        "--seed",
        0,
    )
    assert result.returncode == 0, result.stderr
    assert "epoch 1/1: loss" in result.stdout
    assert (tmp_path / "ck.pt").is_file()


@pytest.mark.parametrize(
    "command, option, value, message",
    [
        ("extract-features", "--num-workers", "-1", "must be 0 or more, got -1"),
        ("extract-features", "--batch-size", "0", "must be 1 or more, got 0"),
        ("extract-features", "--shard-size", "-5", "must be 0 or more, got -5"),
        ("extract-features", "--batch-size", "x", "invalid integer value: 'x'"),
        ("train", "--batch-size", "1", "must be 2 or more, got 1"),
        ("train", "--epochs", "0", "must be 1 or more, got 0"),
        ("train", "--seed", "-1", "must be 0 or more, got -1"),
    ],
)
def test_counts_out_of_range_are_refused_before_anything_runs(
    shapes_dataset, tmp_path, command, option, value, message
):
    """A count the command cannot use (a negative worker count would end in DataLoader's traceback, a zero
    batch in a division by zero) stops at the option, in argparse's one line, with nothing written."""
    arguments = {
        "extract-features": [
            "--arch",
            "clipeval-tiny",
            "--images",
            shapes_dataset / "images.lmdb",
            "--image-output",
            tmp_path / "out.jsonl",
            "--device",
            "cpu",
        ],
        "train": [
            "--arch",
            "clipeval-tiny",
            "--dataset",
            shapes_dataset,
            "--output",
            tmp_path / "out.jsonl",
            "--epochs",
            1,
            "--batch-size",
            20,
            "--lr",
            "1e-3",
            "--seed",
            0,
        ],
    }[command]
    result = run_cli(command, *arguments, option, value)  # argparse keeps the last of a repeated option
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == f"clipeval {command}: error: argument {option}: {message}"
    assert list(tmp_path.iterdir()) == []


def test_bad_json_inputs_are_one_line_errors(chain, tmp_path):
    (tmp_path / "nested.jsonl").write_text('{"image_id": 1, "feature": [[1], [2]]}\n')
    result = knn_cli(tmp_path / "nested.jsonl", chain / "feats/texts.jsonl", tmp_path / "p.jsonl")
    assert_one_line_error(
        result,
        f"{tmp_path / 'nested.jsonl'}:1: image_id 1 has a feature value that is not a number: [1]",
        tmp_path / "p.jsonl",
    )
    (tmp_path / "classes.json").write_text('["circle"]')
    result = run_cli(
        "score-classification",
        "--image-feats",
        chain / "feats/images.jsonl",
        "--class-feats",
        chain / "feats/images.jsonl",
        "--labels",
        tmp_path / "l.jsonl",
        "--classes",
        tmp_path / "classes.json",
        "--output",
        tmp_path / "s.json",
    )
    assert_one_line_error(
        result, f"{tmp_path / 'classes.json'}: expected a JSON object at the top level", tmp_path / "s.json"
    )
    result = run_cli(
        "describe-model", "--arch", "clipeval-tiny", "--preprocess", "{bad", "--output", tmp_path / "d.json"
    )
    assert result.returncode == 1 and result.stderr.startswith("clipeval: error: --preprocess: malformed JSON")
    assert not (tmp_path / "d.json").exists()


def test_the_stage_table_names_each_rule_files_subcommands():
    """Stage = rule file = log folder, and the table lists exactly the subcommands each rule file runs (a rule
    made from the task records runs each record's command)."""
    import re

    from conftest import REPO

    stages = (REPO / "docs/STAGES.md").read_text()
    table = stages[stages.index("| stage (rule file, log folder) |") :].split("\n\n")[0].splitlines()[2:]
    listed = {}
    for row in table:
        stage, commands = [cell.strip() for cell in row.strip("|").split(" | ")[:2]]
        listed[stage] = set(re.findall(r"`clipeval ([a-z-]+)", commands))
    from clipeval.tasks import TASKS

    run = {}
    for rule_file in sorted((REPO / "workflow/rules").glob("*.smk")):
        commands = set(re.findall(r'"python -m clipeval ([a-z-]+)', rule_file.read_text()))
        if "command=task.score_command," in rule_file.read_text():
            commands |= {task.score_command for task in TASKS.values()}
        if "command=job.command," in rule_file.read_text():
            commands |= {job.command for task in TASKS.values() for job in task.report_jobs}
        if commands:
            run[rule_file.stem] = commands
            assert set(re.findall(r'"logs/([a-z]+)/', rule_file.read_text())) == {rule_file.stem}
    assert listed == run


def test_each_command_names_installed_libraries_for_its_fingerprint():
    """A misspelt library would read as 'absent' and its upgrades would re-run nothing."""
    from importlib import metadata

    from clipeval.cli import command_module, command_names

    faiss_builds = {"faiss-cpu", "faiss-gpu"}  # one of the two is installed (docs/CLUSTER_AND_GPU.md, "On a GPU host")
    for name in command_names():
        libraries = command_module(name).LIBRARIES
        assert isinstance(libraries, tuple), name
        for library in set(libraries) - faiss_builds:
            metadata.version(library)
        assert not faiss_builds & set(libraries) or any(
            list(metadata.distributions(name=build)) for build in faiss_builds
        ), name
