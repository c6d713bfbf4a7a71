"""benchmarks/caption_repeats.py counts repeated captions and the blocks encoding each once would spare."""

import json
import subprocess
import sys

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
from caption_repeats import read_captions, repeat_profile  # noqa: E402


def test_a_prepared_texts_file_and_a_token_file_give_the_same_captions(tmp_path):
    captions = ["A dog runs .", "a dog runs .", "A dog runs .", "Two cats\tsleep ."]
    jsonl = tmp_path / "texts.jsonl"
    jsonl.write_text(
        "".join(json.dumps({"text_id": i, "text": text, "image_ids": [0]}) + "\n" for i, text in enumerate(captions))
    )
    token = tmp_path / "Flickr8k.token.txt"
    token.write_text("".join(f"1000_ab.jpg#{i}\t{text.replace(chr(9), ' ')}\n" for i, text in enumerate(captions)))
    assert read_captions(jsonl) == captions
    assert read_captions(token) == ["A dog runs .", "a dog runs .", "A dog runs .", "Two cats sleep ."]


def test_repeats_count_exact_strings_and_spare_only_whole_blocks():
    # 130 rows, 66 distinct strings: 3 blocks of 64 now, 2 for the distinct strings.
    captions = [f"caption {i}" for i in range(66)] + [f"caption {i}" for i in range(64)]
    profile = repeat_profile(captions)
    assert (profile["captions"], profile["distinct"], profile["blocks"], profile["distinct blocks"]) == (130, 66, 3, 2)
    assert profile["repeated share"] == pytest.approx(64 / 130)
    assert profile["saved share"] == pytest.approx(1 / 3)
    assert repeat_profile(["Same", "same"])["repeated share"] == 0


def test_a_file_that_cannot_be_read_is_one_line_naming_it(tmp_path):
    bad = tmp_path / "texts.jsonl"
    bad.write_text('{"text_id": 0, "text": "a dog", "image_ids": [0]}\n{"text_id": 1\n')
    binary = tmp_path / "captions.txt"
    binary.write_bytes(b"\xff\xfe\x00caption\n")
    for path, message in [
        (bad, f"{bad}:2: malformed JSON line"),
        (binary, f"{binary}: cannot be read as UTF-8 text (UnicodeDecodeError)"),
        (tmp_path / "missing.txt", f"{tmp_path / 'missing.txt'}: cannot be read as UTF-8 text (FileNotFoundError)"),
    ]:
        result = subprocess.run(
            [sys.executable, str(REPO / "benchmarks/caption_repeats.py"), str(path)], capture_output=True, text=True
        )
        assert (result.returncode, result.stderr, result.stdout) == (1, f"caption_repeats.py: error: {message}\n", "")
