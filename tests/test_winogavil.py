"""WinoGAViL (data/sources/winogavil.py, compositionality/metrics.py): a cue chooses as many of its candidate
images as it has associations, scored by the Jaccard index, against scikit-learn's jaccard_score on DataComp's
choice (the top scores), by hand on ties, and by group as DataComp reports it (5-6 and 10-12 candidates)."""

import csv
import json

import numpy as np
import pytest
from conftest import run_cli
from sklearn.metrics import jaccard_score
from sources import write_winogavil
from test_compositionality import score

from clipeval.comparison import compare_models
from clipeval.data.choices import Example, load_examples
from clipeval.data.sources.winogavil import cue_caption
from clipeval.errors import ClipevalError
from clipeval.published.benchmarks import JACCARD_10_12
from clipeval.published.check import measured_value
from clipeval.published.tables import index, read_values
from clipeval.suites import suite_metric
from clipeval.tasks import main_metric


def test_prepare_writes_each_row_as_an_example_whose_cue_chooses_among_its_candidates(tmp_path):
    path, images = write_winogavil(tmp_path / "winogavil")
    out = tmp_path / "prepared"
    result = run_cli("prepare", "winogavil", "--examples", path, "--images", images, "--out", out)
    assert result.returncode == 0, result.stderr
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    examples = load_examples(out / "examples.jsonl")
    texts = {row["text_id"]: row["text"] for row in map(json.loads, (out / "texts.jsonl").read_text().splitlines())}
    names = list(dict.fromkeys(name for row in rows for name in json.loads(row["candidates"])))
    assert [example.example_id for example in examples] == [int(row["ID"]) for row in rows]
    for example, row in zip(examples, rows):
        candidates, associations = json.loads(row["candidates"]), json.loads(row["associations"])
        assert example.image_ids == tuple(names.index(name) for name in candidates)
        assert example.associations == tuple(names.index(name) for name in associations)
        assert example.group == {5: "5-6", 6: "5-6", 10: "10-12", 12: "10-12"}[len(candidates)]
        assert texts[example.text_ids[0]] == f"A {row['cue']}"  # the shapes' names start with a consonant


@pytest.mark.parametrize(
    ("cue", "prompt", "caption"),
    [("eagle", "article", "An eagle"), ("Bald", "article", "A bald"), ("Umbrella", "article", "An umbrella"),
     ("Bald", "plain", "Bald")],
)  # fmt: skip
def test_the_cue_is_prompted_as_datacomp_prompts_it(cue, prompt, caption):
    assert cue_caption(cue, prompt) == caption


def random_cues(rng, count, noise):
    """Examples of 5, 6, 10 or 12 candidates with 1 to 4 associations, and features whose cue is near the mean
    of its associations."""
    images = {i: rng.normal(size=6).tolist() for i in range(40)}
    texts, examples = {}, []
    for example_id in range(count):
        size = (5, 6, 10, 12)[example_id % 4]
        candidates = tuple(int(i) for i in rng.choice(40, size=size, replace=False))
        associations = tuple(candidates[: int(rng.integers(1, min(size, 5)))])
        centre = np.mean([images[i] for i in associations], axis=0)
        texts[1000 + example_id] = (centre + rng.normal(scale=noise, size=6)).tolist()
        group = "5-6" if size <= 6 else "10-12"
        examples.append(Example(example_id, group, candidates, (1000 + example_id,), associations=associations))
    return examples, images, texts


def by_scikit_learn(examples, images, texts):
    """Each example's Jaccard index as DataComp computes it: the top n_assoc candidates by cue·image (float32
    features, float64 products), against the associations, by scikit-learn's jaccard_score."""
    scores = []
    for example in examples:
        cue = np.float32(texts[example.text_ids[0]]).astype(np.float64)
        logits = np.array([np.float32(images[i]).astype(np.float64) @ cue for i in example.image_ids])
        top = np.argsort(logits)[-len(example.associations) :]
        y_pred = np.isin(np.arange(len(example.image_ids)), top)
        y_true = np.isin(example.image_ids, example.associations)
        scores.append(jaccard_score(y_true, y_pred))
    return np.array(scores)


def test_the_jaccard_score_is_scikit_learn_s_overall_and_by_group():
    rng = np.random.default_rng(5)
    examples, images, texts = random_cues(rng, 300, 1.0)
    metrics, record = score(examples, images, texts, bootstrap=200, seed=0)
    expected = by_scikit_learn(examples, images, texts)
    in_group = np.array([example.group == "10-12" for example in examples])
    assert metrics["jaccard_score"] == pytest.approx(100 * expected.mean())
    assert metrics["groups"]["10-12"]["jaccard_score"] == pytest.approx(100 * expected[in_group].mean())
    assert metrics["groups"]["5-6"]["jaccard_score"] == pytest.approx(100 * expected[~in_group].mean())
    assert 0 < expected.mean() < 1 and "text_score" not in metrics
    low, high = metrics["intervals"]["groups"]["10-12"]["jaccard_score"]
    assert low < metrics["groups"]["10-12"]["jaccard_score"] < high
    assert main_metric("compositionality", metrics) == "jaccard_score"
    assert suite_metric("compositionality", metrics, "misc/winogavil") == JACCARD_10_12
    assert measured_value(metrics, JACCARD_10_12) == metrics["groups"]["10-12"]["jaccard_score"]
    chosen = [len(set(choice["images"]) & set(example.associations)) for choice, example in
              zip(record["choices"], examples)]  # fmt: skip
    assert [hits for hits, _ in record["chosen_associations"]] == chosen


def test_a_tie_goes_to_the_lower_image_id_and_the_index_is_hits_over_the_union():
    images = {1: [1, 0], 2: [1, 0], 3: [0, 1], 4: [1, 0], 5: [0, 1]}
    texts = {10: [1, 0], 11: [0, 1]}
    examples = [
        # Images 1, 2 and 4 tie for the cue; it chooses two: 1 and 2, of which 2 is associated: 1 / 3.
        Example(0, "5-6", (4, 2, 1, 3, 5), (10,), associations=(2, 3)),
        # The cue chooses 3 and 5, both associated: 1.
        Example(1, "5-6", (1, 2, 3, 4, 5), (11,), associations=(5, 3)),
    ]
    metrics, record = score(examples, images, texts)
    assert [choice["images"] for choice in record["choices"]] == [[1, 2], [3, 5]]
    assert record["chosen_associations"] == [[1, 2], [2, 2]]
    assert metrics["jaccard_score"] == pytest.approx(100 * (1 / 3 + 1) / 2)


def test_two_models_are_compared_by_their_paired_jaccard_score():
    records, values = [], []
    for noise in (0.5, 3.0):
        examples, images, texts = random_cues(np.random.default_rng(8), 300, noise)
        metrics, record = score(examples, images, texts)
        records.append(record)
        values.append(metrics["jaccard_score"])
    comparison = compare_models(("sharp", "blurred"), *records, "blurred.json", 200, 0)
    assert comparison["difference"]["jaccard_score"] == pytest.approx(values[0] - values[1])
    low, high = comparison["intervals"]["jaccard_score"]
    assert 0 < low <= values[0] - values[1] <= high


def test_open_clip_s_table_gives_winogavil_by_its_10_12_jaccard_score():
    shipped = index(read_values())
    values = {v.metric: v.value for v in shipped["ViT-B-32", "openai", "misc/winogavil"]}
    assert values == pytest.approx({JACCARD_10_12: 41.25})  # 0.4125, read off the file by hand


def test_only_a_winogavil_dataset_may_name_winogavil_s_published_numbers():
    from test_planning import plan_of

    from clipeval.planning.checks import check_references
    from clipeval.planning.plan import ConfigError

    def with_dataset(format_name, **settings):
        entry = {"format": format_name, "task": "compositionality", "published": "misc/winogavil", **settings}
        return lambda config: config["datasets"].update(cues=entry)

    check_references(plan_of(with_dataset("winogavil", examples="w.csv", images="images")))
    with pytest.raises(ConfigError) as refused:
        check_references(plan_of(with_dataset("sugarcrepe", annotations="a", images="i")))
    assert str(refused.value) == (
        "datasets.cues.published: misc/winogavil is read by format winogavil, not sugarcrepe: its published numbers"
        " would not be this dataset's"
    )


def test_a_suite_over_cues_without_10_or_12_candidates_says_what_it_needs(tmp_path):
    from clipeval.storage.jsonl import write_json
    from clipeval.suites import score_suite

    examples, images, texts = random_cues(np.random.default_rng(2), 40, 1.0)
    small = [example for example in examples if example.group == "5-6"]
    _, record = score(small, images, texts)
    write_json(tmp_path / "ranks.json", record)
    with pytest.raises(ClipevalError) as refused:
        score_suite("s", ["cues"], {"cues": {"m": tmp_path / "ranks.json"}}, benchmarks={"cues": "misc/winogavil"})
    assert str(refused.value) == (
        f"{tmp_path / 'ranks.json'}: suite s averages groups/10-12/jaccard_score, which this compositionality result"
        " does not have (it needs cues with 10 or 12 candidates, as WinoGAViL's)"
    )


def test_the_gallery_shows_a_cue_s_chosen_and_associated_images():
    from clipeval.reporting.choice_failures import failed_examples, failure_lines

    images = {1: [1, 0], 2: [0, 1], 3: [1, 0], 4: [0, 1], 5: [1, 1]}
    texts = {10: [1, 0], 11: [0, 1]}
    examples = [
        Example(0, "5-6", (1, 2, 3, 4, 5), (10,), associations=(1, 3)),  # chooses 1 and 3: right
        Example(1, "5-6", (1, 2, 3, 4, 5), (11,), associations=(1, 2)),  # chooses 2 and 4: half wrong
    ]
    _, record = score(examples, images, texts)
    assert failed_examples(record, 8) == [1]
    example = {"image_ids": [1, 2, 3, 4, 5], "text_ids": [11], "associations": [1, 2]}
    lines = failure_lines(example, record["choices"][1], {11: "A circle"})
    assert [text for text, _ in lines] == ["caption 11: A circle", "chose images 2 4 (right: 1 2)"]


def rewrite(path, change):
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    change(rows)
    with open(path, "w", newline="") as handle:
        csv.writer(handle).writerows(rows)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda rows: rows[2].__setitem__(2, json.dumps(["item 9"])),
         ":3: example 101: association 'item 9' is not a candidate"),
        (lambda rows: rows[1].__setitem__(2, rows[1][0]),
         ":2: example 100 has 5 associations among 5 images: it needs at least one, and fewer than its images"),
        (lambda rows: rows[2].__setitem__(0, "item 1, item 2"),
         ":3: candidates must be a JSON list of image names, not 'item 1, item 2'"),
        (lambda rows: rows[3].__setitem__(8, "100"), ":4: example ID 100 appears twice"),
        (lambda rows: rows[1].__setitem__(8, "x"), ":2: ID 'x' is not a whole number"),
        (lambda rows: rows[0].__setitem__(1, "word"),
         ": no column 'cue' (WinoGAViL's have candidates, cue, associations, ID)"),
    ],
)  # fmt: skip
def test_a_bad_row_is_one_line_naming_the_file_and_line(tmp_path, change, message):
    path, images = write_winogavil(tmp_path / "winogavil")
    rewrite(path, change)
    result = run_cli("prepare", "winogavil", "--examples", path, "--images", images, "--out", tmp_path / "out")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [f"clipeval: error: {path}{message}"]
    assert not (tmp_path / "out").exists()


def test_a_missing_image_names_the_row_that_first_lists_it(tmp_path):
    path, images = write_winogavil(tmp_path / "winogavil")
    (images / "item 3.jpg").unlink()
    result = run_cli("prepare", "winogavil", "--examples", path, "--images", images, "--out", tmp_path / "out")
    assert result.returncode == 1
    assert result.stderr.strip() == f"clipeval: error: {path}:2: image file {images / 'item 3.jpg'} not found"
