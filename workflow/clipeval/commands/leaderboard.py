from pathlib import Path

HELP = (
    "every scored pair of a results folder as one table of models × datasets, the headline metric with its interval"
    " and its tier (the models the data cannot tell apart from the column's best)"
)
LIBRARIES = ()


def add_arguments(parser):
    parser.add_argument("--results", type=Path, default=Path("results"), help="the workflow's results folder")
    parser.add_argument("--output", type=Path, help="also write the table to this Markdown file")
    parser.add_argument("--html", type=Path, help="also write the table as a web page to this file")


def run(args):
    from clipeval.leaderboard import html_page, markdown, pivot, scored_pairs, tiers_of
    from clipeval.storage.atomic import atomic_output

    pairs, stale = scored_pairs(args.results)
    if stale:
        print(
            f"note: left out {len(stale)} score file(s) of pairs their experiment no longer evaluates"
            f" ({'; '.join(stale[:3])}{' …' if len(stale) > 3 else ''}): earlier runs left them in"
            f" {args.results}/experiments/NAME/scores/MODEL/DATASET/"
        )
    if not pairs:
        print(
            f"no scores in {args.results} (each experiment's are under"
            f" {args.results}/experiments/NAME/scores/MODEL/DATASET/)"
        )
        return
    table = pivot(pairs, *tiers_of(pairs))
    text = markdown(table)
    print(text, end="")
    pages = [(args.output, text), (args.html, html_page(table, str(args.results)))]
    for path, content in pages:
        if path:
            with atomic_output(path) as temporary:
                temporary.write_text(content, encoding="utf-8")
