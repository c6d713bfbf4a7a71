"""Parquet shards as the Hugging Face hub holds image datasets: images in the hub's Image struct, captions as
lists of strings or labels with ClassLabel names in the schema's metadata."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import run_cli
from sources import write_parquet_shards

from clipeval.classification.metrics import load_classes, load_labels
from clipeval.data.dataset import open_dataset
from clipeval.data.sources.shapes import CLASSNAMES
from clipeval.errors import ClipevalError


def table_rows(folder, pattern="*"):
    return [row for shard in sorted(folder.glob(f"{pattern}.parquet")) for row in pq.read_table(shard).to_pylist()]


def prepare_classes(folder, tmp_path, out, *options):
    """`clipeval prepare parquet_classification` of `folder` with tmp_path/templates.txt."""
    (tmp_path / "templates.txt").write_text("a photo of a {}.\n")
    return run_cli(
        "prepare",
        "parquet_classification",
        "--shards",
        folder,
        *options,
        "--templates",
        tmp_path / "templates.txt",
        "--out",
        tmp_path / out,
    )


def test_retrieval_shards_keep_each_images_bytes_and_captions_in_shard_order(tmp_path):
    folder = write_parquet_shards(tmp_path / "hub")
    assert run_cli("prepare", "parquet_retrieval", "--shards", folder, "--out", tmp_path / "d").returncode == 0
    store, captions = open_dataset(tmp_path / "d")
    rows = table_rows(folder)
    assert [store.encoded_bytes(i) for i in range(len(rows))] == [row["image"]["bytes"] for row in rows]
    expected = [(i, text) for i, row in enumerate(rows) for text in row["caption"]]
    assert [(int(ids[0]), text) for ids, text in zip(captions.image_ids, captions.texts)] == expected


@pytest.mark.slow
def test_classification_shards_take_the_hubs_class_names_or_a_file(tmp_path):
    folder = write_parquet_shards(tmp_path / "hub", kind="classification")
    result = prepare_classes(folder, tmp_path, "d")
    assert result.returncode == 0, result.stderr
    spec = load_classes(tmp_path / "d/classes.json")
    assert spec.classnames == list(CLASSNAMES) and spec.templates == ["a photo of a {}."]
    _, labels = load_labels(tmp_path / "d/labels.jsonl", len(CLASSNAMES))
    assert labels.tolist() == [row["label"] for row in table_rows(folder)]
    (tmp_path / "names.txt").write_text("".join(f"class {i}\n" for i in range(6)))
    result = prepare_classes(folder, tmp_path, "e", "--classnames", tmp_path / "names.txt")
    assert result.returncode == 0 and load_classes(tmp_path / "e/classes.json").classnames[0] == "class 0"


def rewrite(shard, change):
    table = pq.read_table(shard)
    pq.write_table(change(table), shard)


@pytest.mark.parametrize(
    "options, spoil, message",
    [
        (
            (),
            lambda f: (f / "test-00001-of-00003.parquet").write_bytes(b"PAR1 garbage"),
            "{f}/test-00001-of-00003.parquet: not a readable parquet file",
        ),
        (
            ("--caption-column", "captions"),
            lambda f: None,
            "{f}/test-00000-of-00003.parquet: no column 'captions' (columns: image, caption)",
        ),
        (
            (),
            lambda f: rewrite(
                f / "test-00000-of-00003.parquet",
                lambda t: t.set_column(1, "caption", pa.array([[]] * t.num_rows, type=pa.list_(pa.string()))),
            ),
            "{f}/test-00000-of-00003.parquet: row 0: caption holds no caption",
        ),
        (
            (),
            lambda f: rewrite(
                f / "test-00002-of-00003.parquet",
                lambda t: t.set_column(
                    0,
                    "image",
                    pa.array([{"bytes": b"xx", "path": "a"}] * t.num_rows, type=t.schema.field("image").type),
                ),
            ),
            "{f}/test-00002-of-00003.parquet: row 0: ",
        ),
    ],
)
def test_a_bad_shard_is_one_line_naming_it_and_writes_nothing(tmp_path, options, spoil, message):
    folder = write_parquet_shards(tmp_path / "hub")
    spoil(folder)
    out = tmp_path / "d"
    result = run_cli("prepare", "parquet_retrieval", "--shards", folder, *options, "--out", out)
    assert result.returncode == 1 and not out.exists()
    assert result.stderr.startswith(f"clipeval: error: {message.format(f=folder)}") and result.stderr.count("\n") == 1


@pytest.mark.slow
def test_a_label_past_the_class_names_or_no_class_names_are_refused(tmp_path):
    folder = write_parquet_shards(tmp_path / "hub", kind="classification")
    (tmp_path / "names.txt").write_text("one\ntwo\n")
    result = prepare_classes(folder, tmp_path, "d", "--classnames", tmp_path / "names.txt")
    assert result.returncode == 1 and "is not a class index below 2" in result.stderr
    shard = folder / "test-00000-of-00003.parquet"
    rewrite(shard, lambda t: t.replace_schema_metadata(None))
    for path in sorted(folder.glob("*.parquet"))[1:]:
        path.unlink()
    result = prepare_classes(folder, tmp_path, "e")
    assert (
        result.stderr == f"clipeval: error: {shard}: row 0: the shards name no classes for 'label'; give classnames\n"
    )


@pytest.mark.slow
def test_a_hub_repository_downloaded_whole_gives_only_the_split_asked_for(tmp_path):
    """The CIFAR-10 example downloads a hub repository whole: train shards beside the test shards joined the
    test set. Only the split asked for is read, the others named in a note."""
    repo = tmp_path / "repo"
    test = write_parquet_shards(repo)  # repo/data/test-0000N-of-00003.parquet
    train = write_parquet_shards(tmp_path / "other", num_images=5, seed=3)
    for number, shard in enumerate(sorted(train.glob("*.parquet"))):
        shard.rename(test / f"train-{number:05d}-of-00002.parquet")
    result = run_cli("prepare", "parquet_retrieval", "--shards", repo, "--out", tmp_path / "d")
    assert result.returncode == 0, result.stderr
    assert f"note: {repo}: read its 3 test shards; left out those of train" in result.stdout
    store, _ = open_dataset(tmp_path / "d")
    assert [store.encoded_bytes(i) for i in store.image_ids()] == [
        row["image"]["bytes"] for row in table_rows(test, "test-*")
    ]
    result = run_cli("prepare", "parquet_retrieval", "--shards", repo, "--split", "train", "--out", tmp_path / "t")
    assert result.returncode == 0, result.stderr
    assert len(open_dataset(tmp_path / "t")[0].image_ids()) == 5
    (test / "extra.parquet").write_bytes((test / "train-00000-of-00002.parquet").read_bytes())
    result = run_cli("prepare", "parquet_retrieval", "--shards", repo, "--out", tmp_path / "e")
    assert result.returncode == 1 and not (tmp_path / "e").exists()
    assert result.stderr == (
        f"clipeval: error: {test}/extra.parquet: its name and folders say no split, beside shards that do: give the"
        " folder of one split\n"
    )


def test_rows_are_read_row_group_by_row_group_and_a_decompression_bomb_is_refused_first(tmp_path, monkeypatch):
    """A 20 KB file whose one cell decompresses to gigabytes peaked at 2.6 GB: each row group's decompressed size
    is read from the file's metadata and checked before the row group is read."""
    import pyarrow as pa

    from clipeval.data import parquet_shards

    folder = tmp_path / "shards"
    folder.mkdir()
    table = pa.table({"image": [b"a", b"b", b"c", b"d", b"e"], "caption": ["1", "2", "3", "4", "5"]})
    pq.write_table(table, folder / "test-00000-of-00001.parquet", row_group_size=2)
    rows = list(parquet_shards.rows(folder, "test", ["image", "caption"]))
    assert [(where.rsplit(": ", 1)[1], row["caption"]) for where, row, _ in rows] == [
        (f"row {index}", str(index + 1)) for index in range(5)
    ]
    bomb = pa.table({"image": [b"x"], "caption": ["0" * (2 << 20)]})
    pq.write_table(bomb, folder / "test-00000-of-00001.parquet", compression="zstd")
    assert (folder / "test-00000-of-00001.parquet").stat().st_size < 4096
    monkeypatch.setattr(parquet_shards, "MAX_ROW_GROUP_BYTES", 1 << 20)
    with pytest.raises(ClipevalError, match=r"row group 0 takes 2,09\d,\d{3} bytes in the columns read once"):
        list(parquet_shards.rows(folder, "test", ["image", "caption"]))
