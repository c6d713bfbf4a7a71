"""How much of a caption set's text extraction encoding each distinct caption once would save.

Extraction encodes every caption row, repeats included, in blocks of 64. A
caption that is the same string as an earlier one gets the same bits, so
encoding each distinct string once would spare the blocks its repeats fill.
Given caption files, this prints per file the captions, the distinct
strings, the share of rows that repeat an earlier one, and the blocks of 64
extraction computes now and would compute for the distinct strings alone:
the share of text extraction that deduplication would save.

A file is either clipeval's prepared `texts.jsonl`
(results/datasets/DATASET_KEY/texts.jsonl, any format prepared) or a
tab-separated caption file whose last column is the caption, as Flickr8k's
and Flickr30k's `*.token.txt` are:

    python benchmarks/caption_repeats.py results/datasets/*/texts.jsonl Flickr8k.token.txt
"""

import argparse
import math
import sys
from pathlib import Path

from measure import exit_status, print_table

from clipeval.data.captions import load_captions
from clipeval.errors import ClipevalError

BLOCK = 64


def read_captions(path: Path) -> list[str]:
    """The caption strings of a texts.jsonl (read as extraction reads it) or of a tab-separated file with the
    caption last; a file that cannot be read is one ClipevalError line naming it."""
    if path.suffix == ".jsonl":
        return load_captions(path).texts
    try:
        with open(path, encoding="utf-8") as lines:
            return [line.rstrip("\n").split("\t")[-1] for line in lines if line.strip()]
    except (OSError, UnicodeDecodeError) as error:
        raise ClipevalError(f"{path}: cannot be read as UTF-8 text ({error.__class__.__name__})") from None


def repeat_profile(captions: list[str]) -> dict:
    """Counts of a caption list: rows, distinct strings, and the blocks each would take."""
    distinct = len(set(captions))
    blocks, distinct_blocks = math.ceil(len(captions) / BLOCK), math.ceil(distinct / BLOCK)
    return {
        "captions": len(captions),
        "distinct": distinct,
        "repeated share": 1 - distinct / len(captions) if captions else 0.0,
        "blocks": blocks,
        "distinct blocks": distinct_blocks,
        "saved share": 1 - distinct_blocks / blocks if blocks else 0.0,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, help="texts.jsonl or tab-separated caption files")
    args = parser.parse_args(argv)
    rows = []
    for path in args.files:
        profile = repeat_profile(read_captions(path))
        rows.append(
            [path.name, profile["captions"], profile["distinct"], f"{profile['repeated share']:.2%}"]
            + [profile["blocks"], profile["distinct blocks"], f"{profile['saved share']:.2%}"]
        )
    print_table(
        "captions that repeat an earlier one, and the text extraction encoding each once would save",
        ["file", "captions", "distinct", "repeats", "blocks of 64", "distinct blocks", "saved"],
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main))
