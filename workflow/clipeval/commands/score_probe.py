import os
from pathlib import Path

from clipeval.commands._options import add_score_output_options, at_least

HELP = "linear probe: logistic regression on frozen image features, few-shot and full, top-1 and per-class recall"
LIBRARIES = ("numpy",)
# OpenBLAS picks its kernels by the CPU (AVX-512 ones on one machine, AVX2 ones on another), and they sum in
# other orders, so the fits would differ in their last bits from machine to machine. Its AVX2 kernels
# (Haswell's; an AMD CPU's Zen kernels are the same code) run alike on every x86-64 CPU with AVX2, as
# portable numerics' torch kernels do. Set before numpy loads OpenBLAS.
BLAS_KERNELS = "Haswell"
# So it starts an interpreter of its own, never a fork of a warm job's server that has loaded numpy (warm_jobs/).
WARM_START = False


def shots_value(text: str):
    """An argparse type: a positive number of images per class, or `all` (probe.protocol.ALL, not imported here:
    it would load numpy before its BLAS kernels are pinned)."""
    return "all" if text == "all" else at_least(1)(text)


def add_arguments(parser):
    parser.add_argument("--train-feats", type=Path, required=True, help="the train split's image features")
    parser.add_argument("--train-labels", type=Path, required=True, help="the train split's labels.jsonl")
    parser.add_argument("--train-classes", type=Path, required=True, help="the train split's classes.json")
    parser.add_argument("--image-feats", type=Path, required=True, help="the test split's image features")
    parser.add_argument("--labels", type=Path, required=True, help="the test split's labels.jsonl")
    parser.add_argument("--classes", type=Path, required=True, help="the test split's classes.json")
    parser.add_argument("--shots", type=shots_value, nargs="+", required=True, help="images per class, or all")
    parser.add_argument("--seeds", type=at_least(1), required=True, help="draws per number of shots")
    parser.add_argument("--validation", type=float, required=True, help="share of train held out under all")
    parser.add_argument("--regularization", type=float, nargs="+", required=True, help="the L2 penalties swept")
    parser.add_argument("--max-iterations", type=at_least(1), default=1000, help="L-BFGS steps per fit at most")
    add_score_output_options(parser)


def pinned_blas_kernels() -> str:
    """Load numpy with OpenBLAS held to BLAS_KERNELS; the kernels it reports, or one line where it runs others."""
    os.environ["OPENBLAS_CORETYPE"] = BLAS_KERNELS
    import numpy  # noqa: F401  loads OpenBLAS
    from threadpoolctl import threadpool_info

    from clipeval.errors import ClipevalError

    kernels = {info.get("architecture") for info in threadpool_info() if info.get("internal_api") == "openblas"}
    if kernels != {BLAS_KERNELS}:
        raise ClipevalError(
            f"the probe's OpenBLAS runs {', '.join(map(str, sorted(kernels, key=str))) or 'no'} kernels, not"
            f" {BLAS_KERNELS}: numpy was loaded before they could be pinned, or it uses another BLAS"
        )
    return BLAS_KERNELS


def train_split_named(config_json, train_labels):
    """How messages name the train split: by the config's key (datasets.NAME.train_split, and the dataset it names)
    where the job was given the config, not by its prepared folder's hashed path."""
    from clipeval.storage.jsonl import parse_json_option

    dataset = (parse_json_option(config_json, "--config") or {}).get("dataset", {})
    if isinstance(dataset, dict) and isinstance(dataset.get("name"), str) and dataset.get("train_split"):
        return f"datasets.{dataset['name']}.train_split ({dataset['train_split']})"
    return train_labels


def run(args):
    kernels = pinned_blas_kernels()  # before anything else loads numpy
    from clipeval.classification.inputs import load_labelled_images
    from clipeval.commands._options import write_scores
    from clipeval.errors import ClipevalError
    from clipeval.features.feature_files import check_same_dimension
    from clipeval.probe.metrics import score_probe
    from clipeval.probe.protocol import ProbeSettings, probe_fits
    from clipeval.storage.provenance import result_provenance

    train = load_labelled_images(args.train_classes, args.train_labels, args.train_feats)
    test = load_labelled_images(args.classes, args.labels, args.image_feats)
    if train.spec.classnames != test.spec.classnames:
        raise ClipevalError(f"{args.train_classes}: its class names differ from the test split's ({args.classes})")
    check_same_dimension(args.train_feats, train.images, args.image_feats, test.images)
    settings = ProbeSettings(
        tuple(args.shots), args.seeds, args.validation, tuple(args.regularization), args.max_iterations
    )
    num_classes = len(test.spec.classnames)
    where = train_split_named(args.config, args.train_labels)
    fits = probe_fits(train.images, train.labels, test.images, num_classes, settings, train.spec.classnames, where)
    metrics, record = score_probe(
        fits, test.image_ids, test.labels, num_classes, train.image_ids, settings, args.bootstrap, args.seed
    )
    metrics["settings"]["blas_kernels"] = kernels
    metrics["provenance"] = result_provenance(args.dataset_meta, args.model_meta, args.config)
    write_scores(args, metrics, record)
    for label, values in metrics["shots"].items():
        print(f"{label}-shot: top-1 {values['top1']:.2f}, mean per-class recall {values['mean_per_class_recall']:.2f}")
