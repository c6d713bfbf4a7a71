"""Suites: a named group of datasets, each model's average of their main metrics, and paired differences.

Each dataset enters a suite's average through its task's main metric
(tasks.main_metric: mean recall for retrieval, top-1 for
classification, mAP for a multi-label set, the text score for
compositionality), or, where it names the benchmark it is (`published:`),
through the metric open_clip's results table reports for that benchmark, as
DataComp defines it (top-1, mean per-class recall, the mean R@1 of both
directions, a worst group's top-1 or top-5, iWildCam's macro F1),
unweighted, as OpenCLIP and DataComp average over datasets. A bootstrap
replicate resamples every dataset's queries (within its folds or groups) and recomputes every
average from them, the same draw for every model, so the interval of a
difference between two models' averages is paired.
"""

from clipeval.comparison import comparison_pairs, stacked_samples
from clipeval.errors import ClipevalError
from clipeval.published.benchmarks import JACCARD_10_12, MACRO_F1, MEAN_R1, benchmark_metric
from clipeval.published.check import measured_value
from clipeval.statistics.bootstrap import bootstrap_record, percentile_intervals
from clipeval.storage.ranks_records import read_ranks_record
from clipeval.tasks import main_metric

SEPARATOR = "\u0000"  # between a dataset's index and its own stream names in the combined samples


def dataset_samples(samples: dict, position: int) -> dict:
    """The combined samples' streams of the dataset at `position`, under their own names."""
    prefix = f"{position}{SEPARATOR}"
    return {key[len(prefix) :]: value for key, value in samples.items() if key.startswith(prefix)}


def suite_metric(task: str, numbers: dict, benchmark: str | None = None) -> str:
    """The metric a dataset enters a suite's average by: its benchmark's in open_clip's results table where it
    names one of its task, else its own main metric."""
    return benchmark_metric(task, benchmark) or main_metric(task, numbers)


def suite_statistic(metrics: list[str], statistics: list[list], models: list[str], pairs):
    """combined samples -> {"averages": {model: mean of main metrics}, "differences": {"a − b": …}}.
    statistics[d][m]: model m's statistic on dataset d's samples."""

    def statistic(samples):
        values = {model: [] for model in models}
        for position, metric in enumerate(metrics):
            own = dataset_samples(samples, position)
            for index, model in enumerate(models):
                values[model].append(measured_value(statistics[position][index](own), metric))
        averages = {model: None if None in found else sum(found) / len(found) for model, found in values.items()}
        differences = {
            f"{models[i]} − {models[j]}": None
            if averages[models[i]] is None or averages[models[j]] is None
            else averages[models[i]] - averages[models[j]]
            for i, j in pairs
        }
        return {"averages": averages, "differences": differences}

    return statistic


# Why a result lacks a metric a suite averages.
MISSING = {
    "mean_recall": " (mean recall needs R@1, R@5 and R@10 in metrics.recall_at)",
    MEAN_R1: " (it needs R@1 in metrics.recall_at)",
    "top1": " (a multi-label set has mAP alone: the benchmark it names in published: is single-label)",
    MACRO_F1: " (scored before ranks records kept each image's predicted class: score it again)",
    JACCARD_10_12: " (it needs cues with 10 or 12 candidates, as WinoGAViL's)",
}


def score_suite(
    name: str, datasets: list[str], ranks: dict, baseline=None, replicates=0, seed=0, benchmarks=None
) -> dict:
    """ranks: {dataset: {model: ranks record path}}; every model of the suite must have every dataset.
    benchmarks: {dataset: the benchmark it names (`published:`)}, for the metric it is averaged by."""
    models = list(ranks[datasets[0]])
    benchmarks = benchmarks or {}
    combined, statistics, metrics = {}, [], []
    for position, dataset in enumerate(datasets):
        if list(ranks[dataset]) != models:
            raise ClipevalError(f"suite {name}: dataset {dataset} has models {list(ranks[dataset])}, not {models}")
        paths = [ranks[dataset][model] for model in models]
        records = [read_ranks_record(path) for path in paths]
        samples, model_statistics = stacked_samples(records, paths)
        task = records[0]["task"]
        numbers = model_statistics[0](samples)
        metrics.append(suite_metric(task, numbers, benchmarks.get(dataset)))
        if measured_value(numbers, metrics[-1]) is None:
            older = [path for path, record in zip(paths, records) if "predicted" not in record]
            blamed = older[0] if metrics[-1] == MACRO_F1 and older else paths[0]
            raise ClipevalError(
                f"{blamed}: suite {name} averages {metrics[-1]}, which this {task} result does not have"
                f"{MISSING.get(metrics[-1], '')}"
            )
        combined.update({f"{position}{SEPARATOR}{key}": value for key, value in samples.items()})
        statistics.append(model_statistics)
    pairs = comparison_pairs(models, baseline if baseline in models else None) if len(models) > 1 else []
    statistic = suite_statistic(metrics, statistics, models, pairs)
    values = statistic(combined)
    result = {
        "suite": name,
        "datasets": datasets,
        "metrics": dict(zip(datasets, metrics)),
        "models": models,
        **values,
        "bootstrap": bootstrap_record(replicates, seed) if replicates else None,
    }
    if replicates:
        result["intervals"] = percentile_intervals(statistic, combined, replicates, seed)
    return result
