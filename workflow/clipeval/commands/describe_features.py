from pathlib import Path

HELP = "identify a precomputed-features model for provenance"
LIBRARIES = ()


def add_arguments(parser):
    parser.add_argument("files", type=Path, nargs="+")
    parser.add_argument("--output", type=Path, required=True)


def run(args):
    from clipeval.errors import ClipevalError
    from clipeval.storage.digests import file_sha256
    from clipeval.storage.jsonl import write_json
    from clipeval.storage.provenance import library_versions

    for path in args.files:
        if not path.is_file():
            raise ClipevalError(f"{path}: feature file not found")
    write_json(
        args.output,
        {
            "features": {str(path): "sha256:" + file_sha256(path) for path in args.files},
            "versions": library_versions(),
        },
    )
