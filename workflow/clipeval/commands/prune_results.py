from pathlib import Path

HELP = "list (or --delete) the shared results no experiment uses: old datasets, checkpoints, features, top-k lists"
LIBRARIES = ()


def add_arguments(parser):
    parser.add_argument("--results", type=Path, default=Path("results"), help="the workflow's results folder")
    parser.add_argument("--delete", action="store_true", help="delete them (run it while no workflow runs)")


def run(args):
    from clipeval.pruning import check_prunable, delete_folders, folder_size, unused_folders

    check_prunable(args.results, args.delete)
    unused = unused_folders(args.results)
    if not unused:
        print(f"every shared result in {args.results} is used by an experiment")
        return
    sizes = [folder_size(folder) for folder in unused]
    for folder, size in zip(unused, sizes):
        print(f"{size / 1e6:10.1f} MB  {folder}")
    if args.delete:
        delete_folders(unused, args.results)
    verb = "deleted" if args.delete else "unused (--delete deletes them)"
    print(f"{sum(sizes) / 1e6:10.1f} MB  in {len(unused)} folders no experiment's record names: {verb}")
