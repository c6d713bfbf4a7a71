import sys

import pytest
from conftest import run_measuring_peak_memory

from clipeval.errors import ClipevalError
from clipeval.storage.atomic import atomic_output
from clipeval.storage.jsonl import read_jsonl, write_json, write_jsonl


def test_atomic_output_renames_only_on_success(tmp_path):
    target = tmp_path / "out.txt"
    with atomic_output(target) as temporary:
        temporary.write_text("done")
        assert not target.exists()
    assert target.read_text() == "done"
    assert list(tmp_path.iterdir()) == [target]


def test_atomic_output_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(RuntimeError):
        with atomic_output(target) as temporary:
            temporary.write_text("half")
            raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []


def test_atomic_output_replaces_a_directory(tmp_path):
    target = tmp_path / "store"
    target.mkdir()
    (target / "old").write_text("x")
    with atomic_output(target) as temporary:
        temporary.mkdir()
        (temporary / "new").write_text("y")
    assert sorted(p.name for p in target.iterdir()) == ["new"]


def test_jsonl_round_trip(tmp_path):
    rows = [{"text_id": 1, "text": "a red circle"}, {"text_id": 2, "text": "ünïcode"}]
    path = tmp_path / "rows.jsonl"
    assert write_jsonl(path, rows) == 2
    assert [row for _, row in read_jsonl(path)] == rows


def test_malformed_line_names_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(ClipevalError, match=r"bad\.jsonl:2: malformed JSON line"):
        list(read_jsonl(path))


def test_non_object_line_is_rejected(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text("[1, 2]\n")
    with pytest.raises(ClipevalError, match=r"bad\.jsonl:1: expected a JSON object"):
        list(read_jsonl(path))


def test_line_numbers_count_blank_lines(tmp_path):
    path = tmp_path / "gaps.jsonl"
    path.write_text('{"a": 1}\n\n   \n{"a": 2}\r\n\n{"a": \n')
    rows = []
    with pytest.raises(ClipevalError) as error:
        for line, row in read_jsonl(path):
            rows.append((line, row))
    assert rows == [(1, {"a": 1}), (4, {"a": 2})]
    assert str(error.value) == f"{path}:6: malformed JSON line"


def test_a_line_longer_than_the_limit_is_refused_without_reading_it_whole(tmp_path):
    from clipeval.storage.jsonl import MAX_LINE_BYTES

    text = "x" * (MAX_LINE_BYTES - len('{"text": ""}\n'))
    path = tmp_path / "long.jsonl"
    path.write_text(f'{{"a": 1}}\n{{"text": "{text}"}}\n{{"text": "{text}y"}}\n')
    rows = []
    with pytest.raises(ClipevalError) as error:
        for line, row in read_jsonl(path):
            rows.append((line, len(row.get("text", ""))))
    assert rows == [(1, 0), (2, len(text))]  # a line of exactly the limit, newline included, is read
    assert str(error.value) == f"{path}:3: line longer than 16 MiB, not read"


def test_one_endless_line_is_refused_in_bounded_memory(tmp_path):
    """A 256 MiB file without a newline: reading it whole would take 256 MiB."""
    path = tmp_path / "endless.jsonl"
    with open(path, "wb") as handle:
        handle.write(b'{"text_id": 1, "text": "')
        handle.truncate(256 << 20)  # the rest reads as zero bytes
    reader = "import sys; from clipeval.storage.jsonl import read_jsonl; list(read_jsonl(sys.argv[1]))"
    result, peak = run_measuring_peak_memory([sys.executable, "-c", reader, path], tmp_path / "peak")
    assert result.stderr.strip().splitlines()[-1] == (
        f"clipeval.errors.ClipevalError: {path}:1: line longer than 16 MiB, not read"
    )
    assert peak < 128 << 20


def test_write_json_is_byte_stable(tmp_path):
    write_json(tmp_path / "a.json", {"b": 1.5, "a": [1, 2]})
    write_json(tmp_path / "b.json", {"a": [1, 2], "b": 1.5})
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_stale_partials_of_one_output_are_removed_and_no_others(tmp_path):
    (tmp_path / ".meta.json.partial-99").write_text("killed writer")
    (tmp_path / ".meta.json.partial-99x").mkdir()
    (tmp_path / ".meta.jsonl.partial-98").write_text("another output's")
    with atomic_output(tmp_path / "meta.json") as temporary:
        temporary.write_text("{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".meta.jsonl.partial-98", "meta.json"]


def test_json_and_text_lists_read_past_a_byte_order_mark(tmp_path):
    from clipeval.data.text_lists import nonblank_lines
    from clipeval.storage.jsonl import read_json

    bom = b"\xef\xbb\xbf"
    (tmp_path / "lines.jsonl").write_bytes(bom + b'{"text_id": 1}\n{"text_id": 2}\n')
    assert list(read_jsonl(tmp_path / "lines.jsonl")) == [(1, {"text_id": 1}), (2, {"text_id": 2})]
    (tmp_path / "one.json").write_bytes(bom + b'{"a": 1}')
    assert read_json(tmp_path / "one.json") == {"a": 1}
    (tmp_path / "classnames.txt").write_bytes(bom + b"cat\ndog\n")
    assert nonblank_lines(tmp_path / "classnames.txt", "class names") == [(1, "cat"), (2, "dog")]
