"""A suite like open_clip's 38-dataset table through the real Snakemake, on tiny exports in CLIP_benchmark's and
DataComp's layouts: each dataset enters the average by the metric its benchmark is published with (mean
per-class recall for Oxford-IIIT Pet, mAP for VOC2007 multi-label, the worst income group's top-5 for Dollar
Street, the worst region's top-1 for FMoW, the macro F1 for iWildCam, the Jaccard score of the cues with 10 or
12 candidates for WinoGAViL, the mean R@1 of both directions for Flickr), each value as the score files have it,
VOC's mAP, iWildCam's macro F1 and WinoGAViL's Jaccard score as scikit-learn computes them from the extracted
features, and each group's accuracy in groups.csv."""

import csv
import json

import numpy as np
import pytest
import yaml
from sklearn.metrics import average_precision_score, f1_score, jaccard_score
from snakemake_runner import copy_workflow, recorded_folders, run_jobs
from sources import shapes, write_wds_export, write_winogavil
from test_series_workflow import write_checkpoint

from clipeval.features.feature_files import read_features

pytestmark = [pytest.mark.workflow, pytest.mark.minutes(2)]

SUITE = {
    "pets": "vtab/pets",
    "voc": "voc2007_multilabel",
    "street": "fairness/dollar_street",
    "fmow": "wilds/fmow",
    "wildcam": "wilds/iwildcam",
    "winogavil": "misc/winogavil",
    "flickr": "flickr30k",
}
CONFIG = {
    "experiment": "openclip-like",
    "datasets": {
        "pets": {"format": "wds_classification", "task": "classification", "export": "sources/pets"},
        "voc": {"format": "wds_classification", "task": "classification", "export": "sources/voc"},
        "street": {
            "format": "wds_classification",
            "task": "classification",
            "export": "sources/street",
            "groups": ["income_ds", "region"],
        },
        "fmow": {
            "format": "wds_classification",
            "task": "classification",
            "export": "sources/fmow",
            "groups": ["region", "year", "y"],
        },
        "wildcam": {"format": "wds_classification", "task": "classification", "export": "sources/wildcam"},
        "winogavil": {
            "format": "winogavil",
            "task": "compositionality",
            "examples": "sources/winogavil/winogavil_dataset.csv",
            "images": "sources/winogavil/images",
        },
        "flickr": {"format": "wds_retrieval", "task": "retrieval", "export": "sources/flickr"},
    },
    "models": {"tiny": {"arch": "clipeval-tiny", "pretrained": "weights/tiny.pt"}},
    "extract": {"batch_size": 32, "num_workers": 0, "device": "cpu"},
    "metrics": {"bootstrap": 50},
    "suites": {"openclip": list(SUITE)},
}
for name, benchmark in SUITE.items():
    CONFIG["datasets"][name]["published"] = benchmark


def held(index):
    return sorted({index % 4, (3 * index + 1) % 6})


def wilds_metadata(index):
    """A WILDS iWildCam sample's metadata as DataComp's export stores it: location, sequence, year, month, day,
    hour, minute, second, y (the groups: are not named, so they are not read)."""
    return [index % 3, index, 2013, 1 + index % 12, 1, 12, 0, 0, 0]


def test_a_suite_averages_each_dataset_by_its_published_benchmarks_metric(tmp_path):
    workdir = copy_workflow(tmp_path / "workflow")
    write_wds_export(workdir / "sources/pets", kind="classification", num_images=12, seed=31)
    write_wds_export(workdir / "sources/voc", kind="multilabel", num_images=12, seed=32, groups=held)
    write_wds_export(
        workdir / "sources/street", kind="classification", num_images=12, seed=33, groups=lambda i: [i % 3, i % 2]
    )
    # FMoW's region, year and class; region 5 is WILDS's "Other", which DataComp's worst region takes in.
    write_wds_export(
        workdir / "sources/fmow", kind="classification", num_images=12, seed=35, groups=lambda i: [i % 6, 2016, 0]
    )
    write_wds_export(workdir / "sources/wildcam", kind="classification", num_images=12, seed=36, groups=wilds_metadata)
    write_wds_export(workdir / "sources/flickr", kind="retrieval", num_images=12, seed=34)
    write_winogavil(workdir / "sources/winogavil", num_rows=12)
    write_checkpoint(workdir / "weights/tiny.pt", 5)
    (workdir / "config/config.yaml").write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    jobs = run_jobs(workdir)
    assert jobs["score_classification"] == 5 and jobs["score_retrieval"] == 1 and jobs["score_suite"] == 1
    assert jobs["score_compositionality"] == 1

    experiment = workdir / "results/experiments/openclip-like"
    task = {name: CONFIG["datasets"][name]["task"] for name in SUITE}
    scores = {name: json.loads((experiment / f"scores/tiny/{name}/{task[name]}.json").read_text()) for name in SUITE}
    flickr = scores["flickr"]
    expected = {
        "pets": ("mean_per_class_recall", scores["pets"]["mean_per_class_recall"]),
        "voc": ("mean_average_precision", scores["voc"]["mean_average_precision"]),
        "street": ("worst_group/income_ds/top5", scores["street"]["worst_group"]["income_ds"]["top5"]),
        "fmow": ("worst_group/region/top1", scores["fmow"]["worst_group"]["region"]["top1"]),
        "wildcam": ("macro_f1", scores["wildcam"]["macro_f1"]),
        "winogavil": ("groups/10-12/jaccard_score", scores["winogavil"]["groups"]["10-12"]["jaccard_score"]),
        "flickr": ("mean_R@1", (flickr["t2i"]["R@1"] + flickr["i2t"]["R@1"]) / 2),
    }
    suite = json.loads((experiment / "suites/openclip.json").read_text())
    assert suite["metrics"] == {name: metric for name, (metric, _) in expected.items()}
    assert suite["averages"]["tiny"] == pytest.approx(np.mean([value for _, value in expected.values()]))

    # VOC's mAP from the features the run extracted, by scikit-learn.
    folders = recorded_folders(workdir, "openclip-like")
    extracted = workdir / folders["features"]["tiny on voc"]
    image_ids, images = read_features(extracted / "images.jsonl", "image_id")
    _, classes = read_features(extracted / "classes.jsonl", "class_id")
    positives = np.zeros((len(image_ids), len(classes)), dtype=bool)
    for row, image_id in enumerate(image_ids):
        positives[row, held(int(image_id))] = True
    logits = images.astype(np.float64) @ classes.astype(np.float64).T
    by_sklearn = [
        average_precision_score(positives[:, c], logits[:, c]) for c in range(len(classes)) if positives[:, c].any()
    ]
    assert scores["voc"]["mean_average_precision"] == pytest.approx(100 * np.mean(by_sklearn))

    # iWildCam's macro F1 from the features, by scikit-learn as WILDS calls it: over the classes with images.
    extracted = workdir / folders["features"]["tiny on wildcam"]
    image_ids, images = read_features(extracted / "images.jsonl", "image_id")
    _, classes = read_features(extracted / "classes.jsonl", "class_id")
    predicted = np.argmax(images.astype(np.float64) @ classes.astype(np.float64).T, axis=1)
    labels = np.array([label for _, _, _, label in shapes(12, 36)])[image_ids]
    by_sklearn = f1_score(labels, predicted, average="macro", labels=np.unique(labels))
    assert scores["wildcam"]["macro_f1"] == pytest.approx(100 * by_sklearn)
    # WinoGAViL's Jaccard score from the features: each cue's top candidates, as DataComp chooses them.
    extracted = workdir / folders["features"]["tiny on winogavil"]
    image_ids, images = read_features(extracted / "images.jsonl", "image_id")
    text_ids, texts = read_features(extracted / "texts.jsonl", "text_id")
    image_row = {int(i): row for row, i in enumerate(image_ids)}
    text_row = {int(t): row for row, t in enumerate(text_ids)}
    indices = []
    for example in map(json.loads, (workdir / folders["datasets"]["winogavil"] / "examples.jsonl").open()):
        cue = texts[text_row[example["text_ids"][0]]].astype(np.float64)
        logits = [images[image_row[i]].astype(np.float64) @ cue for i in example["image_ids"]]
        chosen = np.isin(np.arange(len(logits)), np.argsort(logits)[-len(example["associations"]) :])
        if len(logits) >= 10:
            indices.append(jaccard_score(np.isin(example["image_ids"], example["associations"]), chosen))
    assert scores["winogavil"]["groups"]["10-12"]["jaccard_score"] == pytest.approx(100 * np.mean(indices))
    # FMoW's worst region, every region with images taken in.
    by_region = [scores["fmow"]["by_group"]["region"][str(region)]["top1"] for region in range(6)]
    assert scores["fmow"]["worst_group"]["region"]["top1"] == min(by_region)

    with open(experiment / "groups.csv") as handle:
        groups = list(csv.DictReader(handle))
    assert {(row["dataset"], row["field"], row["group"]) for row in groups} == {
        ("street", "income_ds", "0"), ("street", "income_ds", "1"), ("street", "income_ds", "2"),
        ("street", "region", "0"), ("street", "region", "1"),
        *(("fmow", "region", str(region)) for region in range(6)), ("fmow", "year", "2016"), ("fmow", "y", "0"),
    }  # fmt: skip
    with open(experiment / "summary.csv") as handle:
        wildcam = next(row for row in csv.DictReader(handle) if row["dataset"] == "wildcam")
    assert float(wildcam["macro_f1"]) == round(scores["wildcam"]["macro_f1"], 4)  # summary.csv rounds to 4 places
    summary = (experiment / "summary.md").read_text()
    line = next(line for line in summary.splitlines() if line.startswith("**openclip**: "))
    assert sorted(line.removeprefix("**openclip**: ").split(", ")) == sorted(
        f"{name} ({metric})" for name, (metric, _) in expected.items()
    )
