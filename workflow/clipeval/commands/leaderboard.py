from pathlib import Path

HELP = "every scored pair of a results folder as one table of models × datasets, the headline metric with its interval"
LIBRARIES = ()


def add_arguments(parser):
    parser.add_argument("--results", type=Path, default=Path("results"), help="the workflow's results folder")
    parser.add_argument("--output", type=Path, help="also write the table to this Markdown file")


def run(args):
    from clipeval.leaderboard import markdown, pivot, scored_pairs
    from clipeval.storage.atomic import atomic_output

    pairs = scored_pairs(args.results)
    if not pairs:
        print(f"no scores in {args.results} (each scored pair is under {args.results}/scores/MODEL/DATASET/)")
        return
    text = markdown(pivot(pairs))
    print(text, end="")
    if args.output:
        with atomic_output(args.output) as temporary:
            temporary.write_text(text, encoding="utf-8")
