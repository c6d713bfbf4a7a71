"""Evaluation tasks: one module per task, named after it, each holding a TASK record.

A record says what the rest of clipeval needs to know of a task without
branching on its name: its metrics and headline metric, the settings its
score files carry as data, the keys of its ranks records, what its datasets
need, the command that scores it, the report jobs that draw its figures,
and the module that pairs two models' records of it (`pairing`, with
`check_pairable` and `stacked_samples`; it lives with the task's code, a
layer above this one, and comparison.py imports it by name). score.smk and
report.smk make its rules from the record. A new task is a module here, its
package's code and commands, its figures' captions, and its entries in
config/schema.yaml (docs/ARCHITECTURE.md, "Adding a task").

Standard library and the metric catalogue only: Snakemake reads the records while it plans.
"""

import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field

from clipeval.metric_catalog import ASSOCIATION_METRIC, MULTILABEL_METRIC, Metric


@dataclass(frozen=True)
class Breakdown:
    """A table of a task's results per part (a compositionality set's groups, a probe's numbers of shots)."""

    key: str  # the score file's key that holds each part's numbers
    label: str  # the column that names the part
    title: str
    # Its columns: the task table's where None, else these.
    metrics: tuple[Metric, ...] | None = None
    part_name: str = "{dataset}: {part}"  # how the report names a part's row
    whole: str = ""  # a part that is the whole dataset (a probe's "all" shots), named as the dataset


@dataclass(frozen=True)
class ReportJob:
    """A report job of a task's datasets (report.smk): the figures of a dataset over all its models, or
    (`per_model`) of each model's results on it, a failure gallery."""

    rule: str  # its rule's name
    command: str  # `python -m clipeval COMMAND` that draws them
    # {figure (an artifact, workflow/clipeval/planning/artifacts.py): (its command's option, its label in the
    # report)}; its caption is workflow/report/FIGURE.rst.
    figures: dict
    data: tuple[str, ...] = ()  # the artifacts its command writes beside its figures: their numbers
    log: str = "plots"  # its log's name, in the dataset's log folder (the model's where per model)
    per_model: bool = False
    # Over all models: which file of each model it reads, as --entry MODEL FILE (`scores` or `ranks`).
    entries: str = "scores"
    # Per model: the files it reads, {input: file} as score_inputs names them, `ranks` being the model's ranks
    # record; each given as --INPUT.
    inputs: dict = field(default_factory=dict)
    # Its options for the config's `report` settings.
    options: Callable[[dict], list[str]] | None = None


GALLERY_FLAGS = {"failures": "--failures", "shown": "--shown", "thumbnail_size": "--thumbnail"}


def gallery_options(*settings: str) -> Callable[[dict], list[str]]:
    """A failure gallery's options for these `report` settings."""
    return lambda report: [word for key in settings for word in (GALLERY_FLAGS[key], str(report[key]))]


@dataclass(frozen=True)
class Task:
    name: str
    # Where its sections come among the tasks' in the summary, the report and the comparisons: lowest first.
    order: int
    title: str  # its section's heading in summary.md
    main_metric: str  # its headline: the summary's averages and the experiment listing show it
    main_metric_label: str
    # Every metric a score file of it may hold, in the summary's column order: `metrics` where fixed, or
    # `metrics_for(settings)` where they follow the settings its score file carries (retrieval's K values).
    metrics: tuple[Metric, ...] = ()
    metrics_for: Callable[[dict], list[Metric]] | None = None
    # The paired differences the summary's table shows, for the record's settings (every compared, tabled
    # metric where None); with_rsum False leaves out a sum that only repeats another metric.
    compared_for: Callable[[dict, bool], list[Metric]] | None = None
    # The report table's columns for the settings of its rows (the tabled metrics where None), its caption,
    # and the tables per part that follow it.
    table_for: Callable[[dict], list[Metric]] | None = None
    table_title: str = ""
    breakdowns: tuple[Breakdown, ...] = ()
    # The report's jobs for each of its datasets (over all models) and for each model on each of them.
    report_jobs: tuple[ReportJob, ...] = ()
    # Headline metrics in the order they are tried (a multi-label set's mAP before top-1, the text score before
    # the Jaccard score of a set of associations): the first a result has a value of is its headline, the main
    # metric where none has one.
    headline_metrics: tuple[str, ...] = ()
    # Its part of the summary's headline block, which the README carries: the function of
    # clipeval/reporting/headlines.py that writes it from its summary rows (none where empty).
    headline_block: str = ""
    # Metrics a score file nests under these keys (retrieval's directions): `t2i` → `R@5` is column t2i_R@5.
    nested_under: tuple[str, ...] = ()
    # Settings its score files and comparisons carry as data (retrieval's K values), and the summary row's.
    settings: tuple[str, ...] = ()
    row_fields: dict = field(default_factory=dict)  # {key: default} its summary rows copy from a score file
    counts: tuple[str, ...] = ()  # the counts its summary rows show beside the images
    record_keys: tuple[str, ...] = ()  # the keys every ranks record of it holds
    captioned: bool = False  # whether its datasets' captions are encoded (and so tokenized)
    # The tasks of the dataset its datasets' train_split names, where it is fitted on that split's features.
    fitted_on: tuple[str, ...] = ()
    grouped: bool = False  # whether its datasets may be scored by group (a dataset's `groups:`)
    precomputed_features: str = ""  # the feature file a model of precomputed features needs for it
    score_command: str = ""  # `python -m clipeval COMMAND` that writes its score files
    # What its score command reads, {input: file}, each given as --INPUT (its underscores as dashes) beside every
    # task's --dataset-meta and --model-meta: a dataset artifact (workflow/clipeval/planning/artifacts.py:
    # `dataset_texts`) or a model's features of the dataset (`features/images`, `features/texts`,
    # `features/classes`), its train split's where prefixed `train_split/`.
    score_inputs: dict = field(default_factory=dict)
    # The config's settings, beyond the bootstrap's, that shape its scores: {section: settings} of the config and
    # the dataset's entry (retrieval's K values and protocol, the probe's shots).
    scored_with: Callable[[dict, dict], dict] | None = None
    # Its score command's options for those settings (all its scoring settings, the bootstrap's included).
    score_options: Callable[[dict], list[str]] | None = None
    # Whether its scores are checked against knn's top-k lists under those settings (retrieval under the full
    # protocol): its score job then reads them, and knn runs for it.
    checks_predictions: Callable[[dict], bool] | None = None
    # Whether its score job takes a numpy job's threads (a quarter of a local run's cores), its bytes not
    # depending on them; one thread where False.
    array_threads: bool = False
    pairing: str = ""  # the module with its check_pairable(first, second, path) and stacked_samples(records)

    def metrics_of(self, settings: dict) -> list[Metric]:
        """Every metric of a result scored under `settings` (a score file or a summary row carries them)."""
        return list(self.metrics_for(settings)) if self.metrics_for else list(self.metrics)

    def table_metrics(self, settings: dict) -> list[Metric]:
        return self.table_for(settings) if self.table_for else [metric for metric in self.metrics if metric.tabled]

    def compared_metrics(self, settings: dict, with_rsum: bool = True) -> list[Metric]:
        if self.compared_for:
            return self.compared_for(settings, with_rsum)
        return [metric for metric in self.metrics if metric.compared and metric.tabled]

    @property
    def figures(self) -> list[str]:
        """The report's figures of each of its datasets, over all models."""
        return [name for job in self.report_jobs if not job.per_model for name in job.figures]

    @property
    def model_figures(self) -> list[str]:
        """The report's figures of each model on each of its datasets."""
        return [name for job in self.report_jobs if job.per_model for name in job.figures]

    @property
    def fitted(self) -> bool:
        """Whether it is fitted on the features of a dataset's train_split."""
        return bool(self.fitted_on)

    def headline(self, values: dict) -> str:
        """The headline metric of a result (a metrics file, a summary row or a statistic's numbers)."""
        found = (metric for metric in self.headline_metrics if values.get(metric) is not None)
        return next(found, self.main_metric)


def _discover() -> dict[str, Task]:
    modules = sorted(info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_"))
    records = [__import__(f"{__name__}.{name}", fromlist=["TASK"]).TASK for name in modules]
    for name, record in zip(modules, records):
        if record.name != name:
            raise RuntimeError(f"{__name__}.{name}: its TASK is named {record.name!r}, not after its module")
    return {record.name: record for record in sorted(records, key=lambda record: record.order)}


# Every task, by name, in their order.
TASKS: dict[str, Task] = _discover()


def main_metric(task: str, values: dict) -> str:
    """The headline metric of a result of `task`: its task's, mAP for a multi-label set, or the Jaccard score
    for a set of associations alone."""
    return TASKS[task].headline(values)


METRIC_LABEL = {
    **{task.main_metric: task.main_metric_label for task in TASKS.values()},
    MULTILABEL_METRIC: "mAP",
    ASSOCIATION_METRIC: "Jaccard score",
}
