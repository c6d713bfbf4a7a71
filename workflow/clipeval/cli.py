"""`clipeval SUBCOMMAND …`: each workflow stage as a command. Adapters only: logic lives in the modules."""

import argparse
import sys
from pathlib import Path

from .errors import ClipevalError
from .jsonl import parse_json_option


def _make_shapes(args):
    from .dataset import write_dataset
    from .shapes import CLASS_TEMPLATES, CLASSNAMES, generate_shapes

    images, captions, labels = generate_shapes(args.num_images, args.seed, args.first_image_id)
    source = {"format": "shapes", "num_images": args.num_images, "seed": args.seed}
    classes = (labels, list(CLASSNAMES), list(CLASS_TEMPLATES))
    _report_import(write_dataset(args.out, images, captions, source, classes), args.out)


def _report_import(meta, out):
    counts = meta["counts"]
    if "texts" not in counts:
        print(f"wrote {counts['images']} labelled images to {out}")
        return
    print(f"wrote {counts['images']} images, {counts['texts']} captions to {out}")
    if counts["images_without_caption"]:
        print(f"note: {counts['images_without_caption']} images have no caption")


def _import_imagefolder(args):
    from .dataset import write_dataset
    from .imagefiles import read_image_files
    from .imagefolder import class_folders, image_files, read_classnames, read_templates

    entries = read_classnames(args.classnames)
    templates = read_templates(args.templates)
    files, labels = image_files(class_folders(args.images, entries, args.classnames), args.first_image_id)
    source = {"format": "imagefolder", "images": str(args.images), "classnames": str(args.classnames),
              "templates": str(args.templates)}
    classes = (labels, [name for _, name in entries], templates)
    _report_import(write_dataset(args.out, read_image_files(files, args.images), None, source, classes), args.out)


def _import_cifar(args):
    from .cifar import png_images, read_cifar
    from .dataset import write_dataset
    from .imagefolder import read_templates

    templates = read_templates(args.templates)
    layout, pixels, labels, classnames = read_cifar(args.batch)
    source = {"format": "cifar", "layout": layout, "batch": str(args.batch), "templates": str(args.templates)}
    ids = range(args.first_image_id, args.first_image_id + len(labels))
    classes = (list(zip(ids, labels)), classnames, templates)
    meta = write_dataset(args.out, png_images(pixels, args.first_image_id), None, source, classes)
    _report_import(meta, args.out)


def _import_cnclip(args):
    from .cnclip import import_cnclip

    _report_import(import_cnclip(args.images, args.texts, args.out), args.out)


def _import_karpathy(args):
    from .annotations import karpathy_split
    from .dataset import write_dataset
    from .imagefiles import read_image_files

    files, captions = karpathy_split(args.annotations, args.images, args.split, args.image_id)
    source = {"format": "karpathy", "annotations": str(args.annotations), "images": str(args.images), "split": args.split,
              "image_id": args.image_id}
    _report_import(write_dataset(args.out, read_image_files(files, args.annotations), captions, source), args.out)


def _import_coco(args):
    from .annotations import coco_captions, read_id_list
    from .dataset import write_dataset
    from .imagefiles import read_image_files

    only = read_id_list(args.image_ids) if args.image_ids else None
    files, captions = coco_captions(args.annotations, args.images, only)
    source = {"format": "coco", "annotations": str(args.annotations), "images": str(args.images),
              "image_ids": str(args.image_ids) if args.image_ids else None}
    _report_import(write_dataset(args.out, read_image_files(files, args.annotations), captions, source), args.out)


def _train(args):
    from .train import train_clip

    train_clip(args.arch, args.dataset, args.output, args.epochs, args.batch_size, args.lr, args.seed)


def _extract_features(args):
    from .captions import load_captions
    from .extract import iter_image_features, iter_text_features
    from .sharding import shard_of
    from .features import write_feature_batches
    from .imagestore import ImageStore
    from .model import build_model, resolve_device

    if not (args.image_output or args.text_output):
        raise ClipevalError("nothing to do: give --image-output, --text-output or both")
    if args.image_output and not args.images:
        raise ClipevalError("--image-output needs --images")
    if args.text_output and not args.texts:
        raise ClipevalError("--text-output needs --texts")
    device = resolve_device(args.device)
    captions = load_captions(args.texts) if args.text_output else None
    store = ImageStore(args.images) if args.image_output else None
    image_ids = shard_of(store.image_ids(), args.shard_index, args.shard_size) if store else None
    model, transform, tokenizer = build_model(
        args.arch, args.pretrained, device=device, preprocess=parse_json_option(args.preprocess, "--preprocess")
    )
    speed = {"batch_size": args.batch_size, "device": device, "precision": args.precision}
    if store:
        batches = iter_image_features(model, transform, store, image_ids, num_workers=args.num_workers, **speed)
        write_feature_batches(args.image_output, "image_id", batches)
    if captions:
        batches = iter_text_features(model, tokenizer, captions.text_ids, captions.texts, **speed)
        write_feature_batches(args.text_output, "text_id", batches)


def _encode_classes(args):
    import numpy as np

    from .classification import class_embeddings, load_classes, prompts_for
    from .extract import encode_texts
    from .features import write_features
    from .model import build_model, resolve_device

    spec = load_classes(args.classes)
    device = resolve_device(args.device)
    model, _, tokenizer = build_model(
        args.arch, args.pretrained, device=device, preprocess=parse_json_option(args.preprocess, "--preprocess")
    )
    prompts = prompts_for(spec)
    _, prompt_matrix = encode_texts(model, tokenizer, np.arange(len(prompts)), prompts,
                                    batch_size=args.batch_size, device=device, precision=args.precision)
    classes = class_embeddings(prompt_matrix, len(spec.classnames))
    write_features(args.output, "class_id", np.arange(len(classes)), classes)
    print(f"encoded {len(spec.classnames)} classes from {len(prompts)} prompts")


def _score_classification(args):
    from .classification import align_labels, load_classes, load_labels, score_classification
    from .features import check_same_dimension, read_features
    from .provenance import result_provenance

    spec = load_classes(args.classes)
    label_ids, labels = load_labels(args.labels, len(spec.classnames))
    image_ids, images = read_features(args.image_feats, "image_id")
    class_ids, classes = read_features(args.class_feats, "class_id")
    if class_ids.tolist() != list(range(len(spec.classnames))):
        raise ClipevalError(f"{args.class_feats}: expected class_id 0 to {len(spec.classnames) - 1} in order")
    check_same_dimension(args.image_feats, images, args.class_feats, classes)
    truth = align_labels(image_ids, label_ids, labels, args.image_feats)
    metrics, record = score_classification(image_ids, images, classes, truth, spec.classnames, args.bootstrap, args.seed)
    metrics["provenance"] = result_provenance(args.dataset_meta, args.model_meta, args.config)
    _write_scores(args, metrics, record)
    shown = {k: metrics[k] for k in ("top1", "top5", "mean_per_class_recall")}
    print(f"{shown} {'; '.join(metrics['notes'])}".strip())


def _write_scores(args, metrics, record):
    from .jsonl import write_json

    if args.ranks_output:
        write_json(args.ranks_output, record, compact=True)
    write_json(args.output, metrics)


def _gather_features(args):
    from .features import gather_features, write_features

    ids, matrix = gather_features(args.shards, args.id_key)
    write_features(args.output, args.id_key, ids, matrix)
    print(f"gathered {len(ids)} features from {len(args.shards)} shards")


def _describe_model(args):
    from .jsonl import write_json
    from .model import check_arch, check_pretrained, weights_identity
    from .provenance import library_versions

    check_arch(args.arch)
    check_pretrained(args.arch, args.pretrained)
    write_json(args.output, {
        "arch": args.arch,
        "pretrained": args.pretrained,
        "weights": weights_identity(args.pretrained),
        "precision": args.precision,
        "preprocess": parse_json_option(args.preprocess, "--preprocess"),
        "versions": library_versions(),
    })


def _describe_features(args):
    from .jsonl import write_json
    from .provenance import file_sha256, library_versions

    for path in args.files:
        if not path.is_file():
            raise ClipevalError(f"{path}: feature file not found")
    write_json(args.output, {
        "features": {str(path): "sha256:" + file_sha256(path) for path in args.files},
        "versions": library_versions(),
    })


def _make_topk_predictions(args):
    from .features import check_same_dimension, read_features
    from .jsonl import write_jsonl
    from .knn import DIRECTIONS, FaissSearcher, prediction_rows, top_k

    sides = {
        "images": (args.image_feats, *read_features(args.image_feats, "image_id")),
        "texts": (args.text_feats, *read_features(args.text_feats, "text_id")),
    }
    check_same_dimension(sides["images"][0], sides["images"][2], sides["texts"][0], sides["texts"][2])
    query_side, gallery_side, _, _ = DIRECTIONS[args.direction]
    _, query_ids, queries = sides[query_side]
    _, gallery_ids, gallery = sides[gallery_side]
    searcher = FaissSearcher(gallery, args.device)
    ids, scores = top_k(queries, gallery, gallery_ids, args.top_k, searcher)
    write_jsonl(args.output, prediction_rows(query_ids, ids, scores, args.direction))
    where = "GPU" if searcher.uses_gpu else "CPU"
    print(f"{args.direction}: top-{ids.shape[1]} for {len(query_ids)} queries over {len(gallery_ids)} items ({where})")


def _score_retrieval(args):
    from .captions import load_captions
    from .features import check_same_dimension, read_features
    from .predictions import load_predictions
    from .provenance import result_provenance
    from .retrieval_ranks import FeatureSet, score_retrieval

    if bool(args.t2i) != bool(args.i2t):
        raise ClipevalError("give both --t2i and --i2t, or neither")
    if args.t2i and args.protocol != "full":
        raise ClipevalError(f"--t2i/--i2t rank over the whole gallery; protocol {args.protocol} ranks within folds,"
                            " so they cannot be checked: leave them out")
    captions = load_captions(args.texts)
    images = FeatureSet(args.image_feats, *read_features(args.image_feats, "image_id"))
    texts = FeatureSet(args.text_feats, *read_features(args.text_feats, "text_id"))
    check_same_dimension(images.path, images.matrix, texts.path, texts.matrix)
    predictions = {"t2i": load_predictions(args.t2i, "t2i"), "i2t": load_predictions(args.i2t, "i2t")} if args.t2i else None
    metrics, record = score_retrieval(
        captions, args.texts, images, texts, args.recall_at, protocol=args.protocol,
        allow_without_positive=args.allow_queries_without_positive, predictions=predictions,
        bootstrap=args.bootstrap, seed=args.seed,
    )
    metrics["provenance"] = result_provenance(args.dataset_meta, args.model_meta, args.config)
    _write_scores(args, metrics, record)
    print(f"t2i {metrics['t2i']}  i2t {metrics['i2t']}  rsum {metrics['rsum']:.2f}")


def _compare_models(args):
    from .comparison import compare_models, read_ranks_record
    from .jsonl import write_json

    first, second = (read_ranks_record(path) for path in (args.first, args.second))
    result = compare_models(args.names, first, second, args.second, args.bootstrap, args.seed)
    write_json(args.output, {**result, "dataset": args.dataset})
    print(f"{args.names[0]} − {args.names[1]} on {args.dataset}: {result['difference']}")


def _evaluate(args):
    from .evaluate import evaluate, load_ground_truth
    from .jsonl import write_json
    from .predictions import load_predictions

    result = evaluate(load_ground_truth(args.ground_truth, args.direction),
                      load_predictions(args.predictions, args.direction), args.recall_at)
    write_json(args.output, result)
    print(f"{args.direction}: {result['scoreJson']}")


def _summarize(args):
    from .summary import summarize

    outputs = {"csv": args.csv, "markdown": args.markdown, "averages": args.averages, "comparisons": args.comparisons}
    rows = summarize([tuple(entry) for entry in args.entry or []], args.comparison or [], outputs)
    print(f"wrote {len(rows)} rows to {args.csv} and {args.markdown}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="clipeval", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    shapes = commands.add_parser("make-shapes", help="generate the synthetic shapes benchmark")
    shapes.add_argument("--num-images", type=int, required=True)
    shapes.add_argument("--seed", type=int, required=True)
    shapes.add_argument("--first-image-id", type=int, default=0)
    shapes.add_argument("--out", type=Path, required=True)
    shapes.set_defaults(handler=_make_shapes)

    cnclip = commands.add_parser("import-cnclip", help="import Chinese-CLIP *_imgs.tsv (or image LMDB) + *_texts.jsonl")
    cnclip.add_argument("--images", type=Path, required=True)
    cnclip.add_argument("--texts", type=Path, required=True)
    cnclip.add_argument("--out", type=Path, required=True)
    cnclip.set_defaults(handler=_import_cnclip)

    karpathy = commands.add_parser("import-karpathy", help="import a Karpathy split (dataset_flickr30k.json, dataset_coco.json)")
    karpathy.add_argument("--annotations", type=Path, required=True, help="the Karpathy split JSON")
    karpathy.add_argument("--images", type=Path, required=True, help="the image directory")
    karpathy.add_argument("--split", nargs="+", default=["test"], help="train, restval, val and/or test (default: test)")
    karpathy.add_argument("--image-id", choices=("cocoid", "imgid"), help="id field (default: cocoid where present)")
    karpathy.add_argument("--out", type=Path, required=True)
    karpathy.set_defaults(handler=_import_karpathy)

    coco = commands.add_parser("import-coco", help="import a COCO captions file (captions_val2017.json …)")
    coco.add_argument("--annotations", type=Path, required=True)
    coco.add_argument("--images", type=Path, required=True, help="the image directory")
    coco.add_argument("--image-ids", type=Path, help="keep only these image ids (one per line)")
    coco.add_argument("--out", type=Path, required=True)
    coco.set_defaults(handler=_import_coco)

    folder = commands.add_parser("import-imagefolder", help="import class folders + class names + templates (classification)")
    folder.add_argument("--images", type=Path, required=True, help="one folder per class")
    folder.add_argument("--classnames", type=Path, required=True, help="a class per line: 'folder<TAB>name' or 'name'")
    _add_labelled_import_options(folder)
    folder.set_defaults(handler=_import_imagefolder)

    cifar = commands.add_parser("import-cifar", help="import a CIFAR-10/100 python batch (classification)")
    cifar.add_argument("--batch", type=Path, required=True, help="cifar-10-batches-py/test_batch or cifar-100-python/test")
    _add_labelled_import_options(cifar)
    cifar.set_defaults(handler=_import_cifar)

    train = commands.add_parser("train", help="train a CLIP from scratch on a prepared dataset")
    train.add_argument("--arch", required=True)
    train.add_argument("--dataset", type=Path, required=True)
    train.add_argument("--output", type=Path, required=True)
    train.add_argument("--epochs", type=int, required=True)
    train.add_argument("--batch-size", type=int, required=True)
    train.add_argument("--lr", type=float, required=True)
    train.add_argument("--seed", type=int, required=True)
    train.set_defaults(handler=_train)

    extract = commands.add_parser("extract-features", help="encode a dataset's images and/or captions")
    extract.add_argument("--arch", required=True)
    extract.add_argument("--pretrained", default=None, help="open_clip tag or checkpoint path")
    extract.add_argument("--preprocess", help="JSON overriding open_clip's preprocess config")
    extract.add_argument("--images", type=Path, help="image LMDB directory")
    extract.add_argument("--texts", type=Path, help="texts.jsonl")
    extract.add_argument("--image-output", type=Path)
    extract.add_argument("--text-output", type=Path)
    extract.add_argument("--shard-size", type=int, default=0, help="images per shard; 0 (default): one shard")
    extract.add_argument("--shard-index", type=int, default=0)
    extract.add_argument("--precision", default="fp32", choices=("fp32", "fp16", "bf16", "amp"))
    extract.add_argument("--batch-size", type=int, default=256)
    extract.add_argument("--num-workers", type=int, default=2)
    extract.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    extract.set_defaults(handler=_extract_features)

    encode = commands.add_parser("encode-classes", help="class embeddings from class names × prompt templates")
    encode.add_argument("--arch", required=True)
    encode.add_argument("--pretrained", default=None)
    encode.add_argument("--preprocess", help="JSON overriding open_clip's preprocess config")
    encode.add_argument("--classes", type=Path, required=True, help="classes.json")
    encode.add_argument("--output", type=Path, required=True)
    encode.add_argument("--precision", default="fp32", choices=("fp32", "fp16", "bf16", "amp"))
    encode.add_argument("--batch-size", type=int, default=256)
    encode.add_argument("--device", default="auto")
    encode.set_defaults(handler=_encode_classes)

    classify = commands.add_parser("score-classification", help="zero-shot top-1/top-5, per-class metrics")
    classify.add_argument("--image-feats", type=Path, required=True)
    classify.add_argument("--class-feats", type=Path, required=True)
    classify.add_argument("--labels", type=Path, required=True, help="labels.jsonl")
    classify.add_argument("--classes", type=Path, required=True, help="classes.json")
    _add_score_output_options(classify)
    classify.set_defaults(handler=_score_classification)

    gather = commands.add_parser("gather-features", help="concatenate feature shards in order")
    gather.add_argument("shards", type=Path, nargs="+")
    gather.add_argument("--id-key", choices=("image_id", "text_id"), default="image_id")
    gather.add_argument("--output", type=Path, required=True)
    gather.set_defaults(handler=_gather_features)

    describe = commands.add_parser("describe-model", help="write a model's identity for provenance")
    describe.add_argument("--arch", required=True)
    describe.add_argument("--pretrained", default=None)
    describe.add_argument("--precision", default="fp32")
    describe.add_argument("--preprocess")
    describe.add_argument("--output", type=Path, required=True)
    describe.set_defaults(handler=_describe_model)

    features = commands.add_parser("describe-features", help="identify a precomputed-features model for provenance")
    features.add_argument("files", type=Path, nargs="+")
    features.add_argument("--output", type=Path, required=True)
    features.set_defaults(handler=_describe_features)

    knn = commands.add_parser("make-topk-predictions", help="exact inner-product top-k with FAISS")
    knn.add_argument("--image-feats", type=Path, required=True)
    knn.add_argument("--text-feats", type=Path, required=True)
    knn.add_argument("--top-k", type=int, default=10)
    knn.add_argument("--direction", choices=("t2i", "i2t"), required=True)
    knn.add_argument("--output", type=Path, required=True)
    knn.add_argument("--device", choices=("auto", "cpu", "gpu"), default="auto")
    knn.set_defaults(handler=_make_topk_predictions)

    score = commands.add_parser("score-retrieval", help="recall@K, ranks, Rsum and mean recall, both ways")
    score.add_argument("--texts", type=Path, required=True, help="texts.jsonl holding the ground truth")
    score.add_argument("--image-feats", type=Path, required=True)
    score.add_argument("--text-feats", type=Path, required=True)
    score.add_argument("--t2i", type=Path, help="top-k predictions to check against the features (full protocol)")
    score.add_argument("--i2t", type=Path)
    score.add_argument("--protocol", choices=("full", "folds-1k"), default="full")
    score.add_argument("--recall-at", type=int, nargs="+", default=[1, 5, 10])
    score.add_argument("--allow-queries-without-positive", action="store_true")
    _add_score_output_options(score)
    score.set_defaults(handler=_score_retrieval)

    compare = commands.add_parser("compare-models", help="paired differences of two models' metrics on one dataset")
    compare.add_argument("first", type=Path, help="the first model's ranks record")
    compare.add_argument("second", type=Path, help="the second model's ranks record")
    compare.add_argument("--names", nargs=2, required=True, metavar=("FIRST", "SECOND"))
    compare.add_argument("--dataset", required=True)
    compare.add_argument("--bootstrap", type=_count, default=1000, help="replicates; 0: no intervals")
    compare.add_argument("--seed", type=int, default=0)
    compare.add_argument("--output", type=Path, required=True)
    compare.set_defaults(handler=_compare_models)

    evaluate = commands.add_parser("evaluate", help="Chinese-CLIP compatible recall of one prediction file")
    evaluate.add_argument("ground_truth", type=Path, help="texts jsonl (t2i), or its image_id/text_ids form (i2t)")
    evaluate.add_argument("predictions", type=Path)
    evaluate.add_argument("output", type=Path)
    evaluate.add_argument("--direction", choices=("t2i", "i2t"), default="t2i")
    evaluate.add_argument("--recall-at", type=int, nargs="+", default=[1, 5, 10])
    evaluate.set_defaults(handler=_evaluate)

    summary = commands.add_parser("summarize", help="gather metrics into summary.csv and summary.md")
    summary.add_argument("--entry", nargs=3, action="append", metavar=("MODEL", "DATASET", "METRICS_JSON"))
    summary.add_argument("--comparison", type=Path, action="append", help="a compare-models output")
    summary.add_argument("--csv", type=Path, required=True)
    summary.add_argument("--markdown", type=Path, required=True)
    summary.add_argument("--averages", type=Path, required=True)
    summary.add_argument("--comparisons", type=Path, required=True)
    summary.set_defaults(handler=_summarize)
    return parser


def _add_labelled_import_options(parser):
    parser.add_argument("--templates", type=Path, required=True, help="a prompt template per line, with {} for the name")
    parser.add_argument("--first-image-id", type=int, default=0, help="ids count up from here in file order")
    parser.add_argument("--out", type=Path, required=True)


def _count(text) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _add_score_output_options(parser):
    """What both score commands share: provenance inputs, intervals, and their two outputs."""
    parser.add_argument("--dataset-meta", type=Path, help="the dataset's meta.json")
    parser.add_argument("--model-meta", type=Path, help="the describe-model output")
    parser.add_argument("--config", help="JSON of the config that produced this result, for provenance")
    parser.add_argument("--bootstrap", type=_count, default=0, help="bootstrap replicates for 95%% intervals; 0: none")
    parser.add_argument("--seed", type=int, default=0, help="the bootstrap's seed")
    parser.add_argument("--ranks-output", type=Path, help="per-query ranks, for paired comparisons")
    parser.add_argument("--output", type=Path, required=True)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.handler(args)
    except ClipevalError as error:
        print(f"clipeval: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
