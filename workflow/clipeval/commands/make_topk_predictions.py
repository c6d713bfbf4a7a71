from pathlib import Path

HELP = "exact inner-product top-k with FAISS"
LIBRARIES = ("faiss-cpu", "faiss-gpu", "numpy")


def add_arguments(parser):
    parser.add_argument("--image-feats", type=Path, required=True)
    parser.add_argument("--text-feats", type=Path, required=True)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--direction", choices=("t2i", "i2t"), required=True)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--device", default="auto", help="auto (default), cpu, cuda or cuda:N")
    parser.add_argument(
        "--search",
        default="auto",
        choices=("auto", "numpy", "faiss"),
        help="which float32 search finds the candidates: auto (default) times both on the CPU",
    )


def run(args):
    from clipeval.features.feature_files import check_same_dimension, read_features
    from clipeval.retrieval.directions import DIRECTIONS
    from clipeval.retrieval.topk import Searcher, prediction_rows, top_k
    from clipeval.storage.jsonl import write_jsonl

    sides = {
        "images": (args.image_feats, *read_features(args.image_feats, "image_id")),
        "texts": (args.text_feats, *read_features(args.text_feats, "text_id")),
    }
    check_same_dimension(sides["images"][0], sides["images"][2], sides["texts"][0], sides["texts"][2])
    direction = DIRECTIONS[args.direction]
    _, query_ids, queries = sides[direction.query_side]
    _, gallery_ids, gallery = sides[direction.gallery_side]
    searcher = Searcher(gallery, args.device, args.search)
    ids, scores = top_k(queries, gallery, gallery_ids, args.top_k, searcher)
    write_jsonl(args.output, prediction_rows(query_ids, ids, scores, direction))
    where = "GPU" if searcher.uses_gpu else "CPU"
    timed = ", ".join(f"{name} {seconds * 1000:.3f}" for name, seconds in searcher.seconds_per_query.items())
    print(
        f"{args.direction}: top-{ids.shape[1]} for {len(query_ids)} queries over {len(gallery_ids)} items"
        f" ({searcher.chosen.name} search on the {where}{f'; ms per query: {timed}' if timed else ''})"
    )
