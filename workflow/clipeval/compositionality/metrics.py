"""Compositionality scores: an example's images choose among its captions, its captions among its images.

With exact scores (ranking_rule.py) and ties to the lower id (the ranking rule):

- text score: the percent of examples whose every image chooses its own
  caption over the example's others (SugarCrepe's and ARO's accuracy,
  Winoground's text score);
- image score: the percent of examples whose every caption of an image
  chooses that image over the example's other images (examples with two
  images or more: Winoground);
- group score: both at once (Winoground's group score);
- Jaccard score: for examples whose one caption goes with several of its
  images (WinoGAViL's cue and its associations), the caption chooses as many
  images as it has associations, and the score is the mean Jaccard index of
  the chosen and the associated images, in percent (DataComp's
  jaccard_score; with as many chosen as associated, hits / (2·chosen − hits)).

Each is given over all examples and per group (SugarCrepe's split,
Winoground's tag, ARO's relation or attribute pair). Where the examples say
which groups a macro average takes (ARO's), the macro text score is the mean
of those groups' text scores, as ARO reports its accuracy. Bootstrap replicates resample the examples within each
group, so paired comparisons resample the same examples for both models.
"""

import numpy as np

from clipeval.data.choices import Example
from clipeval.errors import ClipevalError
from clipeval.ranking_rule import exact_pair_scores
from clipeval.statistics.bootstrap import bootstrap_record, percentile_intervals

# The outcome columns of one model's rows: text choice right, image choice right (-1: one image), both.
OUTCOMES = ("text", "image", "group")
NOT_DEFINED = -1
# Then, for an example with associations, how many of the images its caption chose are associated, and how many
# it chose (NOT_DEFINED for other examples).
ASSOCIATION_COLUMNS = ("hits", "chosen")
WIDTH = len(OUTCOMES) + len(ASSOCIATION_COLUMNS)


def _chosen(scores: np.ndarray, ids: tuple[int, ...]) -> int:
    """The id the ranking rule puts first: the highest score, the lowest id on a tie."""
    return min(zip(-scores, ids))[1]


def choose(example: Example, image_rows: dict, text_rows: dict, images: np.ndarray, texts: np.ndarray):
    """(caption chosen by each image, image chosen by each of the images' captions), by id."""
    n = len(example.image_ids)
    rows = np.repeat([image_rows[i] for i in example.image_ids], len(example.text_ids))
    columns = np.tile([text_rows[t] for t in example.text_ids], n)
    table = exact_pair_scores(images, texts, rows, columns).reshape(n, len(example.text_ids))
    texts_chosen = [_chosen(table[j], example.text_ids) for j in range(n)]
    images_chosen = [_chosen(table[:, j], example.image_ids) for j in range(n)] if n > 1 else []
    return texts_chosen, images_chosen


def choose_associations(example: Example, image_rows: dict, text_rows: dict, images, texts) -> list[int]:
    """The images an example's caption chooses, best first: as many as it has associations, the highest scores,
    the lowest id on a tie."""
    rows = np.array([image_rows[i] for i in example.image_ids])
    columns = np.full(len(rows), text_rows[example.text_ids[0]])
    scores = exact_pair_scores(images, texts, rows, columns)
    ranked = sorted(zip(-scores, example.image_ids))
    return [image_id for _, image_id in ranked[: len(example.associations)]]


def example_outcomes(examples: list[Example], image_ids, image_matrix, text_ids, text_matrix, image_path, text_path):
    """(outcome rows, association counts, per-example choices): rows (examples × OUTCOMES) of 1 (right), 0
    (wrong) or NOT_DEFINED; rows (examples × ASSOCIATION_COLUMNS), NOT_DEFINED but for examples with
    associations; and for each example the caption each image chose and the images its captions chose."""
    image_rows = {int(i): row for row, i in enumerate(image_ids)}
    text_rows = {int(t): row for row, t in enumerate(text_ids)}
    for example in examples:
        for ids, rows, path, name in (
            (example.image_ids, image_rows, image_path, "image_id"),
            (example.text_ids, text_rows, text_path, "text_id"),
        ):
            missing = [i for i in ids if i not in rows]
            if missing:
                raise ClipevalError(f"{path}: no feature for {name} {missing[0]} (example {example.example_id})")
    outcomes, counts, choices = [], [], []
    for example in examples:
        if example.associations is not None:
            chosen = choose_associations(example, image_rows, text_rows, image_matrix, text_matrix)
            outcomes.append((NOT_DEFINED,) * len(OUTCOMES))
            counts.append((len(set(chosen) & set(example.associations)), len(chosen)))
            choices.append({"texts": [], "images": chosen})
            continue
        counts.append((NOT_DEFINED,) * len(ASSOCIATION_COLUMNS))
        texts_chosen, images_chosen = choose(example, image_rows, text_rows, image_matrix, text_matrix)
        n = len(example.image_ids)
        text_right = int(texts_chosen == list(example.text_ids[:n]))
        image_right = int(images_chosen == list(example.image_ids)) if n > 1 else NOT_DEFINED
        group_right = int(text_right and image_right == 1) if n > 1 else NOT_DEFINED
        outcomes.append((text_right, image_right, group_right))
        choices.append({"texts": texts_chosen, "images": images_chosen})
    outcome_rows = np.array(outcomes, dtype=np.int64).reshape(-1, len(OUTCOMES))
    return outcome_rows, np.array(counts, dtype=np.int64).reshape(-1, len(ASSOCIATION_COLUMNS)), choices


def scores_of(rows: np.ndarray) -> dict:
    """{text_score, image_score, group_score, jaccard_score} in percent, each over the rows where it is defined
    (rows of WIDTH columns: OUTCOMES, then ASSOCIATION_COLUMNS)."""
    result = {}
    for column, name in enumerate(OUTCOMES):
        defined = rows[:, column] != NOT_DEFINED
        if defined.any():
            result[f"{name}_score"] = float(100.0 * rows[defined, column].mean())
    hits, chosen = rows[:, len(OUTCOMES)], rows[:, len(OUTCOMES) + 1]
    defined = chosen != NOT_DEFINED
    if defined.any():
        result["jaccard_score"] = float(100.0 * np.mean(hits[defined] / (2 * chosen[defined] - hits[defined])))
    return result


def compositionality_statistic(groups: list[str], model: int = 0, macro_groups=None):
    """samples {"examples": [rows of each group]} -> overall and per-group scores of the `model`-th model's
    columns (several models' columns side by side: paired comparisons), and the macro text score over
    `macro_groups` when given."""
    columns = slice(model * WIDTH, (model + 1) * WIDTH)

    def statistic(samples):
        parts = [rows[:, columns] for rows in samples["examples"]]
        by_group = {g: scores_of(rows) for g, rows in zip(groups, parts)}
        result = {**scores_of(np.concatenate(parts)), "groups": by_group}
        if macro_groups is not None:
            chosen = [by_group[g]["text_score"] for g in macro_groups]
            result["macro_text_score"] = float(np.mean(chosen)) if chosen else None
        return result

    return statistic


def macro_groups_of(examples: list[Example]):
    """The groups a macro average takes (those whose examples are all in it), or None where the examples do
    not say."""
    if all(example.macro is None for example in examples):
        return None
    left_out = {example.group for example in examples if not example.macro}
    return [group for group in dict.fromkeys(example.group for example in examples) if group not in left_out]


def group_samples(record: dict) -> dict:
    """{"examples": [rows of each group]} from a ranks record, groups in the record's order: each example's
    outcomes, then its association counts (NOT_DEFINED where the record has none)."""
    outcomes = np.array(record["outcomes"], dtype=np.int64).reshape(-1, len(OUTCOMES))
    counts = record.get("chosen_associations")
    if counts is None:
        counts = np.full((len(outcomes), len(ASSOCIATION_COLUMNS)), NOT_DEFINED, dtype=np.int64)
    rows = np.column_stack([outcomes, np.array(counts, dtype=np.int64).reshape(-1, len(ASSOCIATION_COLUMNS))])
    group_of = np.array(record["group_of"], dtype=np.int64)
    return {"examples": [rows[group_of == index] for index in range(len(record["groups"]))]}


def score_compositionality(
    examples: list[Example], image_ids, image_matrix, text_ids, text_matrix, image_path, text_path, bootstrap=0, seed=0
):
    """(metrics, ranks record): the three scores over all examples and per group, with intervals."""
    outcomes, counts, choices = example_outcomes(
        examples, image_ids, image_matrix, text_ids, text_matrix, image_path, text_path
    )
    groups = list(dict.fromkeys(example.group for example in examples))
    record = {
        "task": "compositionality",
        "groups": groups,
        "example_ids": [example.example_id for example in examples],
        "group_of": [groups.index(example.group) for example in examples],
        "outcomes": outcomes.tolist(),
        "choices": choices,
        "macro_groups": macro_groups_of(examples),
    }
    if any(example.associations is not None for example in examples):
        record["chosen_associations"] = counts.tolist()
    samples = group_samples(record)
    statistic = compositionality_statistic(groups, macro_groups=record["macro_groups"])
    metrics = {"task": "compositionality", **statistic(samples)}
    if bootstrap:
        metrics["intervals"] = percentile_intervals(statistic, samples, bootstrap, seed)
    metrics["bootstrap"] = bootstrap_record(bootstrap, seed) if bootstrap else None
    metrics["counts"] = {
        "images": int(len({i for example in examples for i in example.image_ids})),
        "texts": int(len({t for example in examples for t in example.text_ids})),
        "examples": len(examples),
        "groups": {group: int((np.array(record["group_of"]) == index).sum()) for index, group in enumerate(groups)},
    }
    return metrics, record
