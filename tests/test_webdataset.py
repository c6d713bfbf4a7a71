"""CLIP_benchmark's webdataset exports (clip_benchmark_export_wds): retrieval shards of images and captions,
classification shards of images and class indices with the class names and templates beside them."""

import io
import tarfile

import pytest
from conftest import run_cli
from sources import write_wds_export

from clipeval.classification.metrics import load_classes, load_labels
from clipeval.data.dataset import open_dataset


def shard_samples(root):
    """[(image bytes, other member bytes)] of every sample, shards by number, members in tar order."""
    found = []
    for shard in sorted((root / "test").glob("*.tar"), key=lambda path: int(path.stem)):
        with tarfile.open(shard) as archive:
            members = [(m.name, archive.extractfile(m).read()) for m in archive]
        found += [(members[i][1], members[i + 1][1]) for i in range(0, len(members), 2)]
    return found


def test_a_retrieval_export_keeps_each_images_bytes_and_captions_in_shard_order(tmp_path):
    root = write_wds_export(tmp_path / "export")
    assert run_cli("prepare", "wds_retrieval", "--export", root, "--out", tmp_path / "d").returncode == 0
    store, captions = open_dataset(tmp_path / "d")
    expected = shard_samples(root)
    assert store.image_ids().tolist() == list(range(10))
    assert [store.encoded_bytes(i) for i in range(10)] == [image for image, _ in expected]
    texts = [(i, text) for i, (_, txt) in enumerate(expected) for text in txt.decode().split("\n")]
    assert [(int(ids[0]), text) for ids, text in zip(captions.image_ids, captions.texts)] == texts


def test_a_classification_export_reads_labels_class_names_and_templates(tmp_path):
    root = write_wds_export(tmp_path / "export", kind="classification")
    assert run_cli("prepare", "wds_classification", "--export", root, "--out", tmp_path / "d").returncode == 0
    spec = load_classes(tmp_path / "d/classes.json")
    assert spec.classnames == (root / "classnames.txt").read_text().split()
    assert spec.templates == ["a photo of a {}.", "a drawing of the {}."]
    _, labels = load_labels(tmp_path / "d/labels.jsonl", len(spec.classnames))
    assert labels.tolist() == [int(label) for _, label in shard_samples(root)]


def rewrite_member(shard, name, data):
    with tarfile.open(shard) as archive:
        members = [(m.name, archive.extractfile(m).read()) for m in archive]
    with tarfile.open(shard, "w") as archive:
        for member, content in members:
            if member == name:
                if data is None:
                    continue
                content = data
            info = tarfile.TarInfo(member)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))


def rewrite_shard(shard, edit):
    """The shard written again with edit([(name, bytes)]) as its members; a member whose bytes are a str
    becomes a symbolic link to that name."""
    with tarfile.open(shard) as archive:
        members = [(m.name, archive.extractfile(m).read()) for m in archive]
    with tarfile.open(shard, "w", format=tarfile.USTAR_FORMAT) as archive:
        for name, content in edit(members):
            info = tarfile.TarInfo(name)
            if isinstance(content, str):
                info.type, info.linkname = tarfile.SYMTYPE, content
                archive.addfile(info)
                continue
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))


def moved_to_the_end(members, name):
    return [member for member in members if member[0] != name] + [m for m in members if m[0] == name]


def cut_after_member(shard, count):
    """The shard's bytes up to the end of its `count`-th member: cut at a member boundary, no end marker."""
    with tarfile.open(shard) as archive:
        last = list(archive)[count - 1]
    end = last.offset_data + -(-last.size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE
    shard.write_bytes(shard.read_bytes()[:end])


@pytest.mark.parametrize(
    "kind, spoil, message",
    [
        (
            "retrieval",
            lambda r: rewrite_shard(r / "test/0.tar", lambda ms: ms[:4] + [("s0000001.WEBP", ms[2][1])] + ms[4:]),
            "{r}/test/0.tar: member 's0000001.WEBP': sample s0000001 has a .webp already",
        ),
        (
            "retrieval",
            lambda r: rewrite_shard(r / "test/0.tar", lambda ms: moved_to_the_end(ms, "s0000000.txt")),
            "{r}/test/0.tar: member 's0000000.txt': sample s0000000's members are not together",
        ),
        (
            "retrieval",
            lambda r: rewrite_shard(r / "test/0.tar", lambda ms: ms[:3] + [("s0000001.txt", "s0000000.txt")] + ms[4:]),
            "{r}/test/0.tar: member 's0000001.txt' is a link or a special file, not a sample's file",
        ),
        (
            "retrieval",
            lambda r: rewrite_shard(
                r / "test/0.tar",
                lambda ms: [
                    (name.replace("s0000001.", "s0000001\nclipeval: error: forged."), data) for name, data in ms
                ],
            ),
            "{r}/test/0.tar: member 's0000001\\nclipeval: error: forged.webp' has a control character in its name",
        ),
        (
            "retrieval",
            lambda r: cut_after_member(r / "test/0.tar", 4),
            "{r}/test/0.tar: the archive has no end marker after its last member: was it cut short?",
        ),
        (
            "retrieval",
            lambda r: (r / "test/0.tar").write_bytes((r / "test/0.tar").read_bytes() + (r / "test/1.tar").read_bytes()),
            "{r}/test/0.tar: data at byte 10,240 after the archive's last member is not read (two tars joined, or a"
            " damaged member header): give each tar as a shard of its own",
        ),
        (
            "retrieval",
            lambda r: rewrite_member(r / "test/1.tar", "s0000005.txt", None),
            "{r}/test/1.tar: sample s0000005: has no .txt",
        ),
        (
            "retrieval",
            lambda r: (r / "test/0.tar").write_bytes(b"not a tar"),
            "{r}/test/0.tar: not a readable tar file",
        ),
        (
            "retrieval",
            lambda r: [p.unlink() for p in (r / "test").glob("*.tar")],
            "{r}/test: no shards (0.tar, 1.tar, …)",
        ),
        (
            "classification",
            lambda r: rewrite_member(r / "test/0.tar", "s0000001.cls", b"9"),
            "{r}/test/0.tar: sample s0000001: class '9' is not an index below 6 ({r}/classnames.txt)",
        ),
        (
            "classification",
            lambda r: rewrite_member(r / "test/0.tar", "s0000001.cls", "²".encode()),  # str.isdigit() says yes
            "{r}/test/0.tar: sample s0000001: class '²' is not an index below 6 ({r}/classnames.txt)",
        ),
        (
            "classification",
            lambda r: (r / "zeroshot_classification_templates.txt").write_text("a photo of a {}.\n"),
            "{r}/zeroshot_classification_templates.txt:1: template 'a photo of a {{}}.' has no {{c}} for the class name",
        ),
        (
            "classification",
            lambda r: (r / "dataset_type.txt").write_text("multilabel\n"),
            "{r}/test/0.tar: sample s0000000: has no .npy",  # a multi-label sample's classes
        ),
    ],
)
def test_a_bad_export_is_one_line_naming_the_file_and_writes_nothing(tmp_path, kind, spoil, message):
    root = write_wds_export(tmp_path / "export", kind=kind)
    spoil(root)
    out = tmp_path / "d"
    result = run_cli("prepare", f"wds_{kind}", "--export", root, "--out", out)
    assert result.returncode == 1 and not out.exists()
    assert result.stderr.startswith(f"clipeval: error: {message.format(r=root)}") and result.stderr.count("\n") == 1


def test_a_sparse_member_is_refused_before_its_bytes_are_asked_for(tmp_path):
    """A few KB of tar can declare gigabytes of sparse members (GNU tar's --sparse): all of them were read."""
    import shutil
    import subprocess

    if shutil.which("tar") is None:
        pytest.skip("needs GNU tar to write a sparse member")
    root = write_wds_export(tmp_path / "export")
    shard = root / "test/0.tar"
    members = tmp_path / "members"
    members.mkdir()
    with tarfile.open(shard) as archive:
        names = [member.name for member in archive]
        archive.extractall(members, filter="data")
    with open(members / "s0000001.txt", "wb") as handle:
        handle.truncate(64 << 20)  # a hole: nothing written
    subprocess.run(["tar", "--sparse", "--format=gnu", "-cf", shard, "-C", members, *names], check=True)
    assert shard.stat().st_size < 1 << 20
    out = tmp_path / "d"
    result = run_cli("prepare", "wds_retrieval", "--export", root, "--out", out)
    assert (result.returncode, result.stderr) == (
        1,
        f"clipeval: error: {shard}: member 's0000001.txt' is a sparse file, not a sample's file\n",
    )
    assert not out.exists()
