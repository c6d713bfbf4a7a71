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
  its own, with the CPU's fastest code path instead of the portable one;
- first run, each job a new interpreter: the first run again, in a folder
  of its own, with CLIPEVAL_WARM_JOBS=0 (no job forks from a warm server);
- a sweep (`--sweep N`): N more checkpoints of the architecture on the same
  data, CLIP_benchmark one run each, clipeval one run of them all. Where a
  lent machine's minutes do not allow all of CLIP_benchmark's runs,
  `--peer-sweep-runs` times only that many and counts each run left at
  their mean, and the row says so.

On the GPU (`--device cuda`) the second-model, native and new-interpreter
rows are left out: they answer questions of the CPU.

Captions run from 7 to 29 words, 12.3 on average as Flickr30k's (whose
longest run longer): a block's longest caption decides how far clipeval
encodes it. The last row compares the R@1/5/10 both report for the first
model.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
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


# What a run was before warm jobs (clipeval/warm_jobs/): every job starts an interpreter and imports its libraries.
NEW_INTERPRETERS = {"CLIPEVAL_WARM_JOBS": "0"}


def write_checkpoint(path: Path, seed: int) -> None:
    import open_clip
    import torch

    torch.manual_seed(seed)
    torch.save({"state_dict": open_clip.create_model(ARCH).state_dict()}, path)


@dataclass(frozen=True)
class Setting:
    """How both tools run: on the CPU as the 2-core machine runs them (fp32, batch 64, two loader workers), or
    as a researcher runs them on a GPU node (`--device cuda`)."""

    device: str = "cpu"
    precision: str = "fp32"  # or amp: CLIP_benchmark's default, clipeval's extract.precision: amp
    workers: int = 2
    batch_size: int = 64
    cores: str = "2"

    @property
    def label(self) -> str:
        return f"{self.precision}, {self.device.upper() if self.device != 'cpu' else 'CPU'}"


def install_peer(folder: Path, wheels: Path | None) -> None:
    """CLIP_benchmark into `folder`: from the package index, or from a folder of wheels (a machine without one)."""
    source = ["--no-index", "--find-links", str(wheels)] if wheels else []
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", *source, "--target", folder, *PEER_PACKAGES],
        check=True,
    )


def timed(command, cwd=None, env=None) -> float:
    """The command's wall time; it must succeed."""
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, command))} failed:\n{(result.stdout + result.stderr)[-3000:]}")
    return time.perf_counter() - start


def peer_run(root: Path, peer: Path, checkpoint: Path, recall: list[int], output: Path, setting: Setting) -> float:
    """CLIP_benchmark's command (it takes no device: it computes on the GPU wherever torch sees one)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(peer), os.environ.get("PYTHONPATH")])),
        "OMP_WAIT_POLICY": "PASSIVE",
    }
    precision = ["--no_amp"] if setting.precision == "fp32" else []
    command = [sys.executable, "-m", "clip_benchmark.cli", "eval", "--dataset", "flickr30k", "--task",
               "zeroshot_retrieval", "--dataset_root", root / "images", "--model", ARCH, "--pretrained", checkpoint,
               "--batch_size", str(setting.batch_size), "--num_workers", str(setting.workers), *precision,
               "--recall_k", *map(str, recall), "--output", output]  # fmt: skip
    return timed(command, env=env)


def clipeval_run(
    workdir: Path, models: dict, recall: list[int], setting: Setting, numerics: str = "portable", env=None
) -> float:
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
        "extract": {
            "precision": setting.precision,
            "device": setting.device,
            "num_workers": setting.workers,
            "batch_size": setting.batch_size,
        },
    }
    (workdir / "peer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", **(env or {})}
    command = [sys.executable, "-m", "snakemake", "--cores", setting.cores, "--configfile", "peer.yaml"]
    return timed(command, cwd=workdir, env=env)


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
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where both tools extract")
    parser.add_argument("--precision", choices=("fp32", "amp"), default="fp32")
    parser.add_argument("--workers", type=int, default=2, help="image loader processes of both tools")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--cores", default="2", help="Snakemake's --cores for clipeval (all: the machine's)")
    parser.add_argument("--sweep", type=int, default=0, help="add a row: this many more checkpoints of one arch")
    parser.add_argument(
        "--peer-sweep-runs", type=int, help="time only this many of CLIP_benchmark's sweep runs (default: all)"
    )
    parser.add_argument("--peer-wheels", type=Path, help="install CLIP_benchmark from these wheels, not the index")
    parser.add_argument("--keep", type=Path, help="work in this new folder and leave it (default: a temporary one)")
    args = parser.parse_args(argv)
    setting = Setting(args.device, args.precision, args.workers, args.batch_size, args.cores)
    on_cpu = args.device == "cpu"
    with scratch_folder(args.keep) as scratch:
        peer, workdir = scratch / "peer", scratch / "clipeval"
        install_peer(peer, args.peer_wheels)
        workdir.mkdir()
        copy_workflow(workdir)
        data = workdir / "data"
        data.mkdir()
        write_data(data, args.images)
        first, second = data / "first.pt", data / "second.pt"
        write_checkpoint(first, seed=0)
        write_checkpoint(second, seed=1)
        more = [1, 5, 10, min(50, args.images)]  # CLIP_benchmark refuses a K above the gallery's size
        seconds = Measured()
        peer_first = peer_run(data, peer, first, [1, 5, 10], scratch / "peer-first.json", setting)
        first_started = datetime.now().replace(microsecond=0)
        seconds["first run"] = (peer_first, clipeval_run(workdir, {"first": first}, [1, 5, 10], setting))
        first_jobs = newest_run_by_rule(workdir, first_started)
        seconds[f"R@{more[-1]} too"] = (
            peer_run(data, peer, first, more, scratch / "peer-more.json", setting),
            clipeval_run(workdir, {"first": first}, more, setting),
        )
        if on_cpu:
            seconds["a second model"] = (
                peer_run(data, peer, second, more, scratch / "peer-second.json", setting),
                clipeval_run(workdir, {"first": first, "second": second}, more, setting),
            )
            native = fresh_copy(scratch / "clipeval-native", data)
            seconds["first run, numerics: native"] = (
                seconds["first run"][0],
                clipeval_run(native, {"first": native / "data/first.pt"}, [1, 5, 10], setting, "native"),
            )
            cold = fresh_copy(scratch / "clipeval-cold", data)
            seconds["first run, each job a new interpreter"] = (
                seconds["first run"][0],
                clipeval_run(cold, {"first": cold / "data/first.pt"}, [1, 5, 10], setting, env=NEW_INTERPRETERS),
            )
        if args.sweep:
            row = f"a sweep: {args.sweep} more checkpoints"
            timed_runs = min(args.peer_sweep_runs or args.sweep, args.sweep)
            if timed_runs < args.sweep:
                runs = f"{timed_runs} run{'s' * (timed_runs > 1)}"
                row += f" (CLIP_benchmark: {runs} timed, the other {args.sweep - timed_runs} at their mean)"
            seconds[row] = sweep(data, peer, workdir, scratch, args.sweep, timed_runs, setting)
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
        f" {ARCH} random weights, {setting.label}",
        ["what", "CLIP_benchmark s", "clipeval s", "× CLIP_benchmark"],
        rows,
    )
    print_table(
        f"clipeval's first run above, job by job ({setting.label}; whole seconds, as Snakemake's log stamps them)",
        ["what", "jobs", "seconds"],
        [[what, str(jobs) if jobs else "", f"{seconds:.0f}"] for what, (jobs, seconds) in first_jobs.items()],
    )


JOB_EVENT = re.compile(
    r"^\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]\n(?:(?:local)?(?:rule|checkpoint) (\w+):\n(?:    .*\n)*?    jobid: (\d+)$"
    r"|Finished jobid: (\d+))",
    re.M,
)


def seconds_by_rule(log: str, run_started: datetime) -> dict:
    """{what: (jobs, seconds)} of a Snakemake log: each rule's jobs from start to end, to the second that Snakemake
    stamps, and the wait from the run's start to its first job (Snakemake's start, planning, the model check)."""
    started, totals = {}, {}
    for stamp, rule, job, finished in JOB_EVENT.findall(log):
        moment = datetime.strptime(stamp, "%a %b %d %H:%M:%S %Y")
        if not started and not totals:
            totals["before the first job"] = (0, max(0.0, (moment - run_started).total_seconds()))
        if rule:
            started[job] = (rule, moment)
            continue
        rule, began = started.pop(finished)
        jobs, seconds = totals.get(rule, (0, 0.0))
        totals[rule] = (jobs + 1, seconds + (moment - began).total_seconds())
    return totals


def newest_run_by_rule(workdir: Path, run_started: datetime) -> dict:
    """seconds_by_rule of the newest Snakemake log in workdir."""
    log = max((workdir / ".snakemake/log").glob("*.snakemake.log"), key=lambda path: path.stat().st_mtime)
    return seconds_by_rule(log.read_text(), run_started)


def fresh_copy(folder: Path, data: Path) -> Path:
    """A workflow of its own in `folder`, with a copy of the data: a first run that finds nothing cached."""
    folder.mkdir()
    copy_workflow(folder)
    shutil.copytree(data, folder / "data")
    return folder


def sweep(data: Path, peer: Path, workdir: Path, scratch: Path, count: int, timed_runs: int, setting) -> tuple:
    """(CLIP_benchmark's seconds for `count` more checkpoints, one run each, of which `timed_runs` are timed and
    the rest counted at their mean; clipeval's for one run of them all, its dataset and pixels cached by the
    first run)."""
    checkpoints = {f"sweep-{index}": data / f"sweep-{index}.pt" for index in range(count)}
    for index, path in enumerate(checkpoints.values()):
        write_checkpoint(path, seed=100 + index)
    ours = clipeval_run(workdir, checkpoints, [1, 5, 10], setting)
    runs = [
        peer_run(data, peer, path, [1, 5, 10], scratch / f"peer-{name}.json", setting)
        for name, path in list(checkpoints.items())[:timed_runs]
    ]
    return sum(runs) * count / len(runs), ours


class Measured(dict):
    """{row: (CLIP_benchmark's seconds, clipeval's)}, each row also printed as it is measured: a run stopped
    short (a lent machine's time running out) keeps the rows it measured."""

    def __setitem__(self, row, pair):
        print(f"measured: {row}: CLIP_benchmark {pair[0]:.1f} s, clipeval {pair[1]:.1f} s", file=sys.stderr, flush=True)
        super().__setitem__(row, pair)


@contextmanager
def scratch_folder(keep: Path | None):
    """A temporary folder, or `keep`, made new and left in place."""
    if keep is None:
        with tempfile.TemporaryDirectory(prefix="clipeval-peer-") as scratch:
            yield Path(scratch)
        return
    keep.mkdir(parents=True)
    yield keep.resolve()


if __name__ == "__main__":
    sys.exit(exit_status(main))
