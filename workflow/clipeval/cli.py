"""`clipeval COMMAND …`: every workflow stage as a command (see commands/).

Only the module of the command being run is imported, so a stage runs (and
its code fingerprint covers) its own code and nothing of the other commands.
"""

import argparse
import json
import pkgutil
import sys
from pathlib import Path

from . import commands
from .errors import ClipevalError


def command_names() -> list[str]:
    """Every subcommand, from the module names in commands/, without importing them."""
    return sorted(
        info.name.replace("_", "-") for info in pkgutil.iter_modules(commands.__path__) if not info.name.startswith("_")
    )


def command_module(name: str):
    # __import__ rather than importlib.import_module: Python's -X importtime
    # traces only the former, and the tests read which modules a job loaded from it.
    return __import__(f"{commands.__name__}.{name.replace('-', '_')}", fromlist=["run"])


def build_parser(argv) -> argparse.ArgumentParser:
    """The parser, with full options for the command named in argv (all of them for plain --help)."""
    names = command_names()
    chosen = next((arg for arg in argv if arg in names), None)
    parser = argparse.ArgumentParser(prog="clipeval", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in names:
        if chosen not in (None, name):
            subparsers.add_parser(name)
            continue
        module = command_module(name)
        subparser = subparsers.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(subparser)
        subparser.set_defaults(run=module.run)
    return parser


ARGUMENTS_FILE = "--arguments-file"


def expand_argument_files(argv: list[str]) -> list[str]:
    """`--arguments-file FILE` replaced by the words of FILE, a JSON list of strings (how the workflow passes
    lists too long for a command line: planning/argument_files.py)."""
    expanded, words = [], iter(argv)
    for word in words:
        if word != ARGUMENTS_FILE:
            expanded.append(word)
            continue
        path = next(words, None)
        if path is None:
            raise ClipevalError(f"{ARGUMENTS_FILE} needs a file")
        try:
            listed = json.loads(Path(path).read_text())
        except (OSError, ValueError) as error:
            raise ClipevalError(f"{path}: cannot read the arguments file ({type(error).__name__})") from None
        if not isinstance(listed, list) or not all(isinstance(item, str) for item in listed):
            raise ClipevalError(f"{path}: an arguments file holds a JSON list of strings")
        expanded += listed
    return expanded


# The exit status of a process that SIGINT (Ctrl-C) stopped, as shells report it.
INTERRUPTED = 128 + 2


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        return _run(argv)
    except KeyboardInterrupt:
        # Ctrl-C reaches every job of a run; each says so in one line instead of the frames it was in. Every
        # output is written under a temporary name until complete (storage/atomic.py), so none is left.
        command = next((word for word in argv if not word.startswith("-")), "clipeval")
        print(f"clipeval: {command} interrupted (Ctrl-C); it left no output", file=sys.stderr)
        return INTERRUPTED


def _run(argv: list[str]) -> int:
    try:
        argv = expand_argument_files(argv)
    except ClipevalError as error:
        print(f"clipeval: error: {error}", file=sys.stderr)
        return 1
    args = build_parser(argv).parse_args(argv)
    try:
        args.run(args)
    except ClipevalError as error:
        print(f"clipeval: error: {error}", file=sys.stderr)
        return 1
    except OSError as error:  # what the machine refused: a read-only folder, a full disk, a missing permission
        where = f"{error.filename}: " if error.filename else ""
        print(f"clipeval: error: {where}{error.strerror or error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
