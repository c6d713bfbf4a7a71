"""CLIP_benchmark beside clipeval on the same work: a first run, a re-run after a metric change, a second model.

Both evaluate image–text retrieval of the same Flickr-shaped set (photo-like
JPEGs of 640 × 480, five captions each; Karpathy's layout for clipeval,
CLIP_benchmark's flickr30k layout for it) with the same ViT-B-32 checkpoint
of random weights, fp32 on the CPU (CLIP_benchmark with --no_amp, batch 64,
two loader workers; clipeval with its defaults, `--cores 2`), one after the
other. CLIP_benchmark is installed from the package index into a folder of
this run's own (`pip install --target`, not a dependency of clipeval) and
runs on the same torch and open_clip. Each row is a whole command's wall
time:

- first run: everything from the image files, one model;
- R@50 too: the same, asking for R@50 besides R@1/5/10 (CLIP_benchmark
  computes everything again; clipeval re-runs what depends on the metrics);
- a second model: another checkpoint of ViT-B-32 on the same data;
- first run, numerics: native: clipeval's first run again, in a folder of
  its own, with the CPU's fastest code path instead of the portable one.

Captions run from 7 to 29 words, 12.3 on average as Flickr30k's (whose
longest run longer): a block's longest caption decides how far clipeval
encodes it. The last row compares the R@1/5/10 both report for the first
model.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from extraction import photo_like_jpegs
from measure import exit_status, print_table

REPO = Path(__file__).resolve().parents[1]
PEER = "clip_benchmark==1.6.2"
# Its command imports its captioning metrics (pycocoevalcap) whatever the task.
PEER_PACKAGES = (PEER, "pycocoevalcap", "pycocotools")
ARCH = "ViT-B-32"
CAPTIONS_PER_IMAGE = 5
WORDS = {
    "who": ("a man", "a woman", "two children", "a dog", "an old man", "a girl", "three people", "a cyclist"),
    "doing": ("is walking", "is sitting", "is running", "stands", "is playing", "is waiting", "is looking up"),
    "where": ("on a busy street", "in a park", "near the water", "in front of a shop", "on a snowy hill"),
}
DETAILS = ("at night", "in the rain", "with a red bag", "under a tree", "beside a blue car", "at sunset")
# Details a caption adds to its who, doing and where: Poisson-many, for Flickr30k's mean of 12.3 words.
DETAILS_PER_CAPTION = 1.1


def captions(count: int, seed: int) -> list[list[str]]:
    """Flickr-like captions, five per image, none repeated."""
    rng = np.random.default_rng(seed)
    seen, result = set(), []
    for _ in range(count):
        mine = []
        while len(mine) < CAPTIONS_PER_IMAGE:
            parts = [str(rng.choice(WORDS[part])) for part in WORDS]
            parts += [str(rng.choice(DETAILS)) for _ in range(rng.poisson(DETAILS_PER_CAPTION))]
            text = " ".join(parts) + f" {int(rng.integers(1000))}"
            if text not in seen:
                seen.add(text)
                mine.append(text)
        result.append(mine)
    return result


def write_data(root: Path, count: int) -> None:
    """root/images/*.jpg, root/dataset_flickr30k.json (Karpathy's layout) and
    root/images/flickr30k_test_karpathy.txt (CLIP_benchmark's: its dataset root is the image folder)."""
    images = root / "images"
    images.mkdir(parents=True)
    entries, lines, sentid = [], ["image,caption"], 0
    for imgid, (raw, texts) in enumerate(zip(photo_like_jpegs(count), captions(count, seed=1))):
        name = f"{1000000 + imgid}.jpg"
        (images / name).write_bytes(raw)
        sentences = [{"raw": t, "tokens": t.split(), "imgid": imgid, "sentid": sentid + i} for i, t in enumerate(texts)]
        sentid += len(texts)
        entries.append({"imgid": imgid, "filename": name, "split": "test", "sentences": sentences})
        lines += [f"{name},{text}" for text in texts]
    (root / "dataset_flickr30k.json").write_text(json.dumps({"images": entries, "dataset": "flickr30k"}))
    (images / "flickr30k_test_karpathy.txt").write_text("\n".join(lines) + "\n")


def write_checkpoint(path: Path, seed: int) -> None:
    import open_clip
    import torch

    torch.manual_seed(seed)
    torch.save({"state_dict": open_clip.create_model(ARCH).state_dict()}, path)


def install_peer(folder: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", folder, *PEER_PACKAGES],
        check=True,
    )


def timed(command, cwd=None, env=None) -> float:
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, command))} failed:\n{(result.stdout + result.stderr)[-3000:]}")
    return time.perf_counter() - start


def peer_run(root: Path, peer: Path, checkpoint: Path, recall: list[int], output: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(peer), "OMP_WAIT_POLICY": "PASSIVE"}
    command = [sys.executable, "-m", "clip_benchmark.cli", "eval", "--dataset", "flickr30k", "--task",
               "zeroshot_retrieval", "--dataset_root", root / "images", "--model", ARCH, "--pretrained", checkpoint,
               "--batch_size", "64", "--num_workers", "2", "--no_amp", "--recall_k", *map(str, recall),
               "--output", output]  # fmt: skip
    return timed(command, env=env)


def clipeval_run(workdir: Path, models: dict, recall: list[int], numerics: str = "portable") -> float:
    import yaml

    config = {
        "experiment": "peer",
        "datasets": {
            "flickr-like": {
                "format": "karpathy",
                "task": "retrieval",
                "annotations": "data/dataset_flickr30k.json",
                "images": "data/images",
            }
        },
        "models": {name: {"arch": ARCH, "pretrained": f"data/{path.name}"} for name, path in models.items()},
        "metrics": {"recall_at": recall},
        "numerics": numerics,
    }
    (workdir / "peer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return timed([sys.executable, "-m", "snakemake", "--cores", "2", "--configfile", "peer.yaml"], cwd=workdir, env=env)


def copy_workflow(workdir: Path) -> None:
    for name in ("Snakefile", "workflow", "config", "envs", "profiles"):
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, workdir / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, workdir / name)


def recalls(peer_output: Path, clipeval_scores: Path) -> str:
    """'equal', or the recalls that differ, as 'name: peer vs clipeval'."""
    peer = json.loads(peer_output.read_text())["metrics"]
    ours = json.loads(clipeval_scores.read_text())
    pairs = {
        f"{direction} R@{k}": (100 * peer[f"{kind}_retrieval_recall@{k}"], ours[direction][f"R@{k}"])
        for k in (1, 5, 10)
        for direction, kind in (("t2i", "image"), ("i2t", "text"))
    }
    differing = [f"{name}: {a:.2f} vs {b:.2f}" for name, (a, b) in pairs.items() if abs(a - b) > 1e-3]
    return "equal" if not differing else "; ".join(differing)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=400, help=f"images, {CAPTIONS_PER_IMAGE} captions each")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="clipeval-peer-") as scratch:
        scratch = Path(scratch)
        peer, workdir = scratch / "peer", scratch / "clipeval"
        install_peer(peer)
        workdir.mkdir()
        copy_workflow(workdir)
        data = workdir / "data"
        data.mkdir()
        write_data(data, args.images)
        native_workdir = scratch / "clipeval-native"
        native_workdir.mkdir()
        copy_workflow(native_workdir)
        first, second = data / "first.pt", data / "second.pt"
        write_checkpoint(first, seed=0)
        write_checkpoint(second, seed=1)
        more = [1, 5, 10, min(50, args.images)]  # CLIP_benchmark refuses a K above the gallery's size
        seconds = {}
        seconds["first run"] = (
            peer_run(data, peer, first, [1, 5, 10], scratch / "peer-first.json"),
            clipeval_run(workdir, {"first": first}, [1, 5, 10]),
        )
        seconds[f"R@{more[-1]} too"] = (
            peer_run(data, peer, first, more, scratch / "peer-more.json"),
            clipeval_run(workdir, {"first": first}, more),
        )
        seconds["a second model"] = (
            peer_run(data, peer, second, more, scratch / "peer-second.json"),
            clipeval_run(workdir, {"first": first, "second": second}, more),
        )
        shutil.copytree(data, native_workdir / "data")
        seconds["first run, numerics: native"] = (
            seconds["first run"][0],
            clipeval_run(native_workdir, {"first": native_workdir / "data/first.pt"}, [1, 5, 10], "native"),
        )
        agreement = recalls(
            scratch / "peer-first.json", workdir / "results/experiments/peer/scores/first/flickr-like/retrieval.json"
        )
    rows = [[what, f"{peer:.1f}", f"{ours:.1f}", f"{ours / peer:.2f}"] for what, (peer, ours) in seconds.items()]
    peer_first, ours_first = seconds["first run"]
    texts = args.images * CAPTIONS_PER_IMAGE
    rows.append(
        [
            "first run: images/s and captions/s",
            f"{args.images / peer_first:.2f} and {texts / peer_first:.2f}",
            f"{args.images / ours_first:.2f} and {texts / ours_first:.2f}",
            "",
        ]
    )
    rows.append(["R@1/5/10 of the first model, both ways", "", agreement, ""])
    print_table(
        f"CLIP_benchmark ({PEER.split('==')[1]}) and clipeval on the same work: {args.images} JPEGs, {texts} captions,"
        f" {ARCH} random weights, fp32, CPU",
        ["what", "CLIP_benchmark s", "clipeval s", "× CLIP_benchmark"],
        rows,
    )


if __name__ == "__main__":
    sys.exit(exit_status(main))
