"""The linear probe: a classifier fitted on a train split's frozen image features (clipeval.probe)."""

from clipeval.metric_catalog import PROBE_METRICS, PROBE_SHOT_METRICS
from clipeval.tasks import Breakdown, ReportJob, Task


def _scored_with(config: dict, entry: dict) -> dict:
    return {"probe": config["probe"]}


def _score_options(settings: dict) -> list[str]:
    probe = settings["probe"]
    return [
        *("--shots", *(str(shots) for shots in probe["shots"])),
        *("--seeds", str(probe["seeds"]), "--validation", str(probe["validation"])),
        *("--regularization", *(repr(float(value)) for value in probe["regularization"])),
        *("--max-iterations", str(probe["max_iterations"])),
    ]


TASK = Task(
    name="probe",
    order=3,
    title="Probe",
    table_title="Linear probe (the most shots; spread over seeds)",
    breakdowns=(
        Breakdown(
            "shots", "shots", "Linear probe by shots", tuple(PROBE_SHOT_METRICS), "{dataset}: {part}-shot", whole="all"
        ),
    ),
    main_metric="probe_top1",
    main_metric_label="probe top-1",
    metrics=tuple(PROBE_METRICS),
    counts=("classes",),
    record_keys=("num_classes", "image_ids", "labels", "shots", "seeds", "predictions"),
    fitted_on=("classification", "probe_train"),  # a probe_train dataset is extracted for a probe alone
    precomputed_features="images",
    report_jobs=(
        ReportJob(
            "plot_probe",
            "plot-probe",
            {"probe_plot": ("--output", "linear probe by shots")},
            data=("probe_plot_data",),
            log="probe",
        ),
    ),
    score_command="score-probe",
    score_inputs={
        "train_feats": "train_split/features/images",
        "train_labels": "train_split/dataset_labels",
        "train_classes": "train_split/dataset_classes",
        "image_feats": "features/images",
        "labels": "dataset_labels",
        "classes": "dataset_classes",
    },
    scored_with=_scored_with,
    score_options=_score_options,
    pairing="clipeval.probe.pairing",
)
