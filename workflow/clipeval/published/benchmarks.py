"""The benchmarks the shipped tables report, under the names CLIP_benchmark gives them (its --dataset), with
how each table names them and which metric its number is.

A dataset of a config says which one it is with `published: NAME`. The
metric of open_clip's main table is DataComp's main metric for the task
(DataComp's tasklist.yml): top-1 accuracy, mean per-class recall, or for
retrieval the mean of both directions' R@1, for Dollar Street the worst
income group's top-5, for GeoDE and FMoW the worst region's top-1 (a
dataset's `groups:` must name income_ds or region), for iWildCam the
macro F1 and for WinoGAViL the Jaccard score of the examples with 10 or 12
candidates (the group "10-12" of a `winogavil` dataset).
"""

from dataclasses import dataclass

TOP1, MEAN_PER_CLASS_RECALL, MEAN_R1, MACRO_F1 = "top1", "mean_per_class_recall", "mean_R@1", "macro_f1"
# DataComp's worst-group accuracies (classification/groups.py): a score file's worst_group → field → top-k.
WORST_INCOME_TOP5, WORST_REGION_TOP1 = "worst_group/income_ds/top5", "worst_group/region/top1"
# DataComp's jaccard_score_10-12 (compositionality/metrics.py): a score file's groups → "10-12" → jaccard_score.
JACCARD_10_12 = "groups/10-12/jaccard_score"


@dataclass(frozen=True)
class Benchmark:
    task: str  # the clipeval task whose numbers it reports
    openclip_column: str | None = None  # its column in openclip_results.csv
    openclip_metric: str = TOP1  # what that column holds
    openclip_retrieval: str | None = None  # its columns' prefix in openclip_retrieval_results.csv
    clip_benchmark_names: tuple = ()  # its `dataset` in CLIP_benchmark's benchmark.csv
    formats: tuple = ()  # the source formats that hold it, where only some of its task's do


def _classification(column, metric=TOP1, *clip_benchmark_names):
    return Benchmark("classification", column, metric, None, clip_benchmark_names)


BENCHMARKS = {
    "imagenet1k": _classification("ImageNet 1k", TOP1, "imagenet1k"),
    "imagenetv2": _classification("ImageNet v2", TOP1, "imagenetv2"),
    "imagenet_sketch": _classification("ImageNet Sketch", TOP1, "imagenet_sketch"),
    "imagenet-a": _classification("ImageNet-A", TOP1, "imagenet-a"),
    "imagenet-o": _classification("ImageNet-O", TOP1),
    "imagenet-r": _classification("ImageNet-R", TOP1, "imagenet-r"),
    "objectnet": _classification("ObjectNet", TOP1, "objectnet"),
    "cifar10": _classification("CIFAR-10", TOP1, "vtab/cifar10"),
    "vtab/cifar100": _classification("CIFAR-100", TOP1, "vtab/cifar100"),
    "vtab/caltech101": _classification("Caltech-101", MEAN_PER_CLASS_RECALL, "vtab/caltech101"),
    "vtab/clevr_count_all": _classification("CLEVR Counts", TOP1, "vtab/clevr_count_all"),
    "vtab/clevr_closest_object_distance": _classification("CLEVR Distance", TOP1, "vtab/clevr_closest_object_distance"),
    "country211": _classification("Country211", TOP1, "country211"),
    "vtab/dtd": _classification("Describable Textures", TOP1, "vtab/dtd"),
    "vtab/eurosat": _classification("EuroSAT", TOP1, "vtab/eurosat"),
    "fgvc_aircraft": _classification("FGVC Aircraft", MEAN_PER_CLASS_RECALL, "fgvc_aircraft"),
    "food101": _classification("Food-101", TOP1),
    "gtsrb": _classification("GTSRB", TOP1, "gtsrb"),
    "vtab/kitti_closest_vehicle_distance": _classification(
        "KITTI Vehicle Distance", TOP1, "vtab/kitti_closest_vehicle_distance"
    ),
    "mnist": _classification("MNIST", TOP1, "mnist"),
    "vtab/flowers": _classification("Oxford Flowers-102", MEAN_PER_CLASS_RECALL, "vtab/flowers"),
    "vtab/pets": _classification("Oxford-IIIT Pet", MEAN_PER_CLASS_RECALL, "vtab/pets"),
    "voc2007": _classification("Pascal VOC 2007", TOP1, "voc2007"),
    "voc2007_multilabel": _classification(None, TOP1, "voc2007_multilabel"),  # its mean average precision
    "vtab/pcam": _classification("PatchCamelyon", TOP1, "vtab/pcam"),
    "renderedsst2": _classification("Rendered SST2", TOP1, "renderedsst2"),
    "vtab/resisc45": _classification("RESISC45", TOP1, "vtab/resisc45"),
    "cars": _classification("Stanford Cars", TOP1, "cars"),
    "stl10": _classification("STL-10", TOP1, "stl10"),
    "sun397": _classification("SUN397", TOP1, "sun397"),
    "vtab/svhn": _classification("SVHN", TOP1, "vtab/svhn"),
    "wilds/camelyon17": _classification("Camelyon17", TOP1),
    "wilds/iwildcam": _classification("iWildCam", MACRO_F1),
    "wilds/fmow": _classification("FMoW", WORST_REGION_TOP1),
    "fairness/dollar_street": _classification("Dollar Street", WORST_INCOME_TOP5),
    "fairness/geode": _classification("GeoDE", WORST_REGION_TOP1),
    "fer2013": _classification(None, TOP1, "fer2013"),
    "vtab/diabetic_retinopathy": _classification(None, TOP1, "vtab/diabetic_retinopathy"),
    "vtab/dmlab": _classification(None, TOP1, "vtab/dmlab"),
    "vtab/dsprites_label_orientation": _classification(None, TOP1, "vtab/dsprites_label_orientation"),
    "vtab/dsprites_label_x_position": _classification(None, TOP1, "vtab/dsprites_label_x_position"),
    "vtab/smallnorb_label_azimuth": _classification(None, TOP1, "vtab/smallnorb_label_azimuth"),
    "vtab/smallnorb_label_elevation": _classification(None, TOP1, "vtab/smallnorb_label_elevation"),
    "misc/winogavil": Benchmark("compositionality", "WinoGAViL", JACCARD_10_12, formats=("winogavil",)),
    "flickr30k": Benchmark("retrieval", "Flickr", MEAN_R1, "Flickr", ("flickr30k",)),
    "mscoco_captions": Benchmark("retrieval", "MSCOCO", MEAN_R1, "MSCOCO", ("mscoco_captions",)),
    "flickr8k": Benchmark("retrieval", clip_benchmark_names=("flickr8k",)),
}


def benchmark_metric(task: str, benchmark: str | None) -> str | None:
    """The metric open_clip's results table reports for `benchmark` (DataComp's main metric), where it is of
    `task` and the table has it; None otherwise."""
    found = BENCHMARKS.get(benchmark)
    return found.openclip_metric if found and found.task == task and found.openclip_column else None
