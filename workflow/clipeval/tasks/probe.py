"""The linear probe: a classifier fitted on a train split's frozen image features (clipeval.probe)."""

from clipeval.metric_catalog import PROBE_METRICS, PROBE_SHOT_METRICS
from clipeval.tasks import Breakdown, Task

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
    fitted=True,
    precomputed_features="images",
    figures=("probe_plot",),
    score_command="score-probe",
    pairing="clipeval.probe.pairing",
)
