"""Re-run exactly what changed: each row changes one thing after a full run
and asserts the exact jobs Snakemake plans; then that a run does exactly what
was planned and leaves nothing to do, for some rows alone, for the others
all at once (RUN_ALONE below)."""

import base64
import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest
from snakemake_runner import (
    copy_experiment,
    edit_config,
    planned_jobs,
    plus,
    recorded_folders,
    run_as_planned,
    run_jobs,
    small_experiment,
    snakemake,
)

pytestmark = [pytest.mark.workflow, pytest.mark.minutes(9)]

EVALUATE_ONE_PAIR = {
    "extract_text_features": 1,
    "extract_image_shard": 1,
    "gather_image_features": 1,
    "knn": 2,
    "score_retrieval": 1,
}


def times(jobs, n):
    return {rule: count * n for rule, count in jobs.items()}


# After new scores of both pairs: the summary, and the report's tables, figures and failure galleries.
FINISH = {"summary": 1, "all": 1, "report_tables": 1, "plot_retrieval": 2, "retrieval_failures": 2}
# After new scores of one pair: the summary, the tables, and that dataset's figures and gallery.
FINISH_ONE = {"summary": 1, "all": 1, "report_tables": 1, "plot_retrieval": 1, "retrieval_failures": 1}


@pytest.fixture(scope="module")
def output_cache(small_experiment_run):
    """Snakemake's between-workflow cache (--cache), filled by the baseline's run."""
    return small_experiment_run.output_cache


@pytest.fixture(scope="module")
def baseline(small_experiment_run):
    """The small experiment, run once for the session (tests/conftest.py); tests re-run copies of it."""
    assert small_experiment_run.ran == plus(
        {"prepare_shapes": 2, "prepare_cnclip": 1, "train": 1, "describe_model": 1, "decode_pixels": 2},
        times(EVALUATE_ONE_PAIR, 2),
        FINISH,
    )
    return small_experiment_run.workdir


def fake_installed_version(workdir, distribution, version):
    """Make importlib.metadata report another installed version, as an upgrade would."""
    site = workdir / "upgraded-site"
    info = site / f"{distribution.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n")
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}


def append_comment(workdir, module):
    with open(workdir / "workflow/clipeval" / module, "a") as handle:
        handle.write("\n# edited\n")


def replace_one_image(workdir):
    from clipeval.data.sources.shapes import generate_shapes

    other = generate_shapes(1, seed=99)[0][0][1]
    path = workdir / "sources/cn_imgs.tsv"
    lines = path.read_text().splitlines()
    image_id = lines[3].split("\t")[0]
    lines[3] = f"{image_id}\t{base64.b64encode(other).decode()}"
    path.write_text("\n".join(lines) + "\n")


def folders(workdir):
    """Where the small experiment's shared artifacts are (its record's folders)."""
    return recorded_folders(workdir, "small")


def touch_without_change(workdir):
    found = folders(workdir)
    for path in [
        "sources/cn_imgs.tsv",
        "sources/cn_texts.jsonl",
        f"{found['datasets']['shapes-test']}/texts.jsonl",
        f"{found['datasets']['cn-test']}/meta.json",
        f"{found['features']['tiny on cn-test']}/texts.jsonl",
        found["checkpoints"]["tiny"],
        f"{found['predictions']['tiny on shapes-test']}/t2i.jsonl",
    ]:
        os.utime(workdir / path)


def date_results_ahead(workdir, seconds=86400):
    """Every result dated a day ahead, as a clock that was ahead (or a file server's) leaves them."""
    import time

    ahead = time.time_ns() + seconds * 10**9
    for path in (workdir / "results").rglob("*"):
        os.utime(path, ns=(ahead, ahead), follow_symlinks=False)


def edit_captions(workdir):
    path = workdir / "sources/cn_texts.jsonl"
    path.write_text(path.read_text().replace("a ", "one ", 1))


def add_features_model(workdir):
    """A model given as feature files (here, copies of tiny's), as Chinese-CLIP's extract_features.py writes them."""
    features = {}
    for dataset in ("shapes-test", "cn-test"):
        features[dataset] = {}
        for side in ("images", "texts"):
            target = workdir / f"precomputed/{dataset}/{side}.jsonl"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(workdir / folders(workdir)["features"][f"tiny on {dataset}"] / f"{side}.jsonl", target)
            features[dataset][side] = str(target.relative_to(workdir))
    edit_config(workdir, lambda c: c["models"].update(given={"features": features}))


def config_change(change):
    return lambda workdir: edit_config(workdir, change)


REEXTRACT_BOTH = plus({"describe_model": 1}, times(EVALUATE_ONE_PAIR, 2), FINISH)
# A dataset's images decoded for the one preprocessing of the experiment's model (and of a copy of it).
PIXELS_ONE = {"decode_pixels": 1}

MATRIX = {
    "nothing": (lambda workdir: None, {}),
    "knn.top_k": (config_change(lambda c: c["knn"].update(top_k=20)), {"knn": 4, "score_retrieval": 2, **FINISH}),
    "metrics.recall_at": (
        config_change(lambda c: c["metrics"].update(recall_at=[1, 3, 5, 10])),
        {"score_retrieval": 2, **FINISH},
    ),
    "metrics.ranking_at": (
        config_change(lambda c: c["metrics"].update(ranking_at=[5, 10])),
        {"score_retrieval": 2, **FINISH},
    ),
    "suites": (
        config_change(lambda c: c.update(suites={"both": ["shapes-test", "cn-test"]})),
        {"score_suite": 1, "plot_suite": 1, "summary": 1, "report_tables": 1, "all": 1},
    ),
    "metrics.allow_queries_without_positive": (
        config_change(lambda c: c["metrics"].update(allow_queries_without_positive=True)),
        {"score_retrieval": 2, **FINISH},
    ),
    "metrics.bootstrap": (
        config_change(lambda c: c["metrics"].update(bootstrap=200)),
        {"score_retrieval": 2, **FINISH},
    ),
    "new model": (
        lambda w: edit_config(
            w,
            lambda c: c["models"].update(
                copy={"arch": "clipeval-tiny", "pretrained": folders(w)["checkpoints"]["tiny"]}
            ),
        ),
        plus(REEXTRACT_BOTH, {"compare_models": 2, "plot_comparisons": 2}),
    ),
    "new precomputed-features model": (
        add_features_model,
        {
            "describe_features_model": 1,
            "knn": 4,
            "score_retrieval": 2,
            "compare_models": 2,
            "plot_comparisons": 2,
            **FINISH,
        },
    ),
    "new dataset": (
        config_change(
            lambda c: c["datasets"].update(
                val={"format": "shapes", "task": "retrieval", "num_images": 30, "seed": 7, "first_image_id": 300000}
            )
        ),
        plus({"prepare_shapes": 1}, PIXELS_ONE, EVALUATE_ONE_PAIR, FINISH_ONE),
    ),
    "dataset image content": (
        replace_one_image,
        plus({"prepare_cnclip": 1}, PIXELS_ONE, EVALUATE_ONE_PAIR, FINISH_ONE),
    ),
    "dataset caption content": (edit_captions, plus({"prepare_cnclip": 1}, PIXELS_ONE, EVALUATE_ONE_PAIR, FINISH_ONE)),
    "model weights (training settings)": (
        config_change(lambda c: c["models"]["tiny"]["train"].update(seed=1)),
        plus({"train": 1}, REEXTRACT_BOTH),
    ),
    "model precision": (config_change(lambda c: c["models"]["tiny"].update(precision="bf16")), REEXTRACT_BOTH),
    "model preprocessing": (
        config_change(lambda c: c["models"]["tiny"].update(preprocess={"interpolation": "bilinear"})),
        REEXTRACT_BOTH,
    ),
    "speed knobs": (
        config_change(
            lambda c: (
                c["extract"].update(batch_size=16, num_workers=2, device="cpu", pixels=False),
                c["knn"].update(device="cpu"),
            )
        ),
        {},
    ),
    "top-k module source": (
        lambda w: append_comment(w, "retrieval/topk.py"),
        {"knn": 4, "score_retrieval": 2, **FINISH},
    ),
    "summary module source": (
        lambda w: append_comment(w, "reporting/summary.py"),
        {"summary": 1, "report_tables": 1, "all": 1},
    ),
    "report settings": (
        config_change(lambda c: c.update(report={"failures": 3, "shown": 4, "thumbnail_size": 64})),
        {"retrieval_failures": 2, "all": 1},
    ),
    "figure module source": (
        lambda w: append_comment(w, "reporting/figures.py"),
        {"plot_retrieval": 2, "retrieval_failures": 2, "all": 1},
    ),
    "touch without content change": (touch_without_change, {}),
    # Extraction then decodes the images itself, to the same bits (tests/test_pixels.py).
    "stored pixels deleted": (lambda w: [path.unlink() for path in (w / "results/pixels").rglob("pixels.npy")], {}),
}

VERSION_MATRIX = {
    "faiss-cpu": {"knn": 4, "score_retrieval": 2, **FINISH},
    "open_clip_torch": plus({"train": 1}, REEXTRACT_BOTH),
}


# Planned before prepare runs, skipped once it has: the re-prepared captions
# file has the same content, and Snakemake checks input checksums at run time.
SKIPPED_AT_RUN_TIME = {"dataset image content": {"extract_text_features": 1}}
# Every row's plan is checked alone. Rows whose prepare job re-runs also run
# alone: what it writes may come out the same, and Snakemake then skips
# planned jobs at run time. A new model's and a new dataset's jobs run in
# test_workflow_reruns.py (test_new_model_and_new_dataset_add_only_their_own_jobs),
# a features model's below. The other rows change what planned jobs compute
# (parameters, code, weights, library versions) and run all at once, in
# test_every_other_change_at_once_runs_as_planned_and_leaves_nothing_to_do:
# one run instead of one per row (docs/DEVELOPMENT.md).
RUN_ALONE = ("dataset image content", "dataset caption content")
RUN_ELSEWHERE = ("new model", "new dataset", "new precomputed-features model", "model preprocessing")


@pytest.mark.parametrize("row", list(MATRIX))
def test_rerun_matrix(baseline, tmp_path, row):
    change, expected = MATRIX[row]
    workdir = copy_experiment(baseline, tmp_path / "experiment")
    change(workdir)
    assert planned_jobs(workdir) == expected
    if row in RUN_ALONE:
        skipped = SKIPPED_AT_RUN_TIME.get(row, {})
        assert run_jobs(workdir) == {
            rule: n - skipped.get(rule, 0) for rule, n in expected.items() if n > skipped.get(rule, 0)
        }
        assert planned_jobs(workdir) == {}


def upgraded_libraries(workdir):
    """The environment in which every distribution of VERSION_MATRIX reports a newer installed version."""
    env = {}
    for distribution in VERSION_MATRIX:
        env = fake_installed_version(workdir, distribution, "999.0")  # one folder: the same PYTHONPATH each time
    return env


@pytest.mark.parametrize("distribution", list(VERSION_MATRIX))
def test_library_upgrade_plans_the_stages_that_use_it(baseline, tmp_path, distribution):
    workdir = copy_experiment(baseline, tmp_path / "experiment")
    env = fake_installed_version(workdir, distribution, "999.0")
    assert planned_jobs(workdir, env=env) == VERSION_MATRIX[distribution]


def test_a_new_preprocessing_decodes_its_pixels_once_its_model_is_described(baseline, tmp_path):
    """A dry run cannot know a model's new pixel recipe before describe_model (a checkpoint) has found it, so it
    plans the re-extraction alone; the run adds the new recipe's pixel jobs, one per dataset, and leaves
    nothing to do."""
    change, planned = MATRIX["model preprocessing"]
    workdir = copy_experiment(baseline, tmp_path / "experiment")
    change(workdir)
    assert planned_jobs(workdir) == planned
    assert run_jobs(workdir) == plus(planned, times(PIXELS_ONE, 2))
    assert planned_jobs(workdir) == {}
    pixels = workdir / folders(workdir)["datasets"]["cn-test"].replace("datasets", "pixels", 1)
    assert sorted(path.name for path in pixels.iterdir()) == [
        "64x64-shortest-bicubic-fill0",
        "64x64-shortest-bilinear-fill0",
    ]


def test_every_other_change_at_once_runs_as_planned_and_leaves_nothing_to_do(baseline, tmp_path):
    """The matrix's changes that run nowhere else, and both library upgrades, in one experiment: the run
    does exactly what Snakemake planned, every row's jobs among it, and afterwards nothing is left to do,
    so no parameter, code or version that a row changes is recorded in a way that plans it again."""
    together = [row for row in MATRIX if row not in RUN_ALONE + RUN_ELSEWHERE]
    workdir = copy_experiment(baseline, tmp_path / "experiment")
    for row in together:
        MATRIX[row][0](workdir)
    run_as_planned(
        workdir,
        [MATRIX[row][1] for row in together] + list(VERSION_MATRIX.values()),
        env=upgraded_libraries(workdir),
        # open_clip's upgrade re-runs the pixel jobs too, planned only once describe_model has run (it is a
        # checkpoint: a dry run cannot see past it)
        added_at_run_time=times(PIXELS_ONE, 2),
    )


def test_results_dated_ahead_are_refused_and_once_dated_now_an_older_edit_plans_its_jobs(baseline, tmp_path):
    """Results written under a clock that was ahead would hide every later edit of their inputs from
    Snakemake's time comparisons: planning refuses them, naming the first; once they are dated now (as the
    message says), an edit made before that date plans what depends on it, as the content is tracked."""
    from snakemake_runner import config_error_line, snakemake

    workdir = copy_experiment(baseline, tmp_path / "experiment")
    date_results_ahead(workdir)
    edit_captions(workdir)
    line = config_error_line(snakemake(workdir, "--dry-run"))
    assert re.fullmatch(
        r"config error: (results/\S+): dated \S+ \S+, ahead of this machine's"
        r" clock \(\S+ \S+\), so a later change of its inputs would look older and re-run nothing: once the clocks"
        r" agree, date it now with touch -c -h -d now \1 \(every such result:"
        r" find results -newermt now -exec touch -c -h -d now \{\} \+\)",
        line,
    ), line
    # As touch -d now does: one instant for every file. Each file's own "now", a clock tick apart, could date an
    # input after its output, which would re-run the job.
    now = time.time_ns()
    for path in (workdir / "results").rglob("*"):
        os.utime(path, ns=(now, now), follow_symlinks=False)
    # Nothing is dated ahead any more, so the run is an ordinary one: the matrix's caption row runs it.
    assert planned_jobs(workdir) == MATRIX["dataset caption content"][1]


def test_a_local_dir_model_is_tracked_by_the_content_of_its_folder(baseline, tmp_path):
    """open_clip's `local-dir:DIR` loads DIR's weights and ignores `pretrained`: new weights in DIR re-extract
    that model's features (and what follows), and its provenance names them."""
    import torch
    from conftest import REPO

    from clipeval.storage.digests import folder_sha256

    workdir = copy_experiment(baseline, tmp_path / "experiment")
    folder = workdir / "weights/run1"
    folder.mkdir(parents=True)
    model_cfg = json.loads((REPO / "workflow/clipeval/models/configs/clipeval-tiny.json").read_text())
    (folder / "open_clip_config.json").write_text(json.dumps({"model_cfg": model_cfg}))
    state = torch.load(workdir / folders(workdir)["checkpoints"]["tiny"], map_location="cpu")
    torch.save(state, folder / "open_clip_pytorch_model.bin")
    run1 = {"arch": "local-dir:weights/run1", "pretrained": ""}
    pairs = [{"model": m, "dataset": d} for m, d in [("tiny", "shapes-test"), ("tiny", "cn-test"), ("run1", "cn-test")]]
    edit_config(workdir, lambda c: (c["models"].update(run1=run1), c.update(evaluate=pairs)))
    run_jobs(workdir)
    meta = json.loads((workdir / folders(workdir)["models"]["run1"] / "meta.json").read_text())
    assert meta["weights"] == f"folder-sha256:{folder_sha256(folder)}"

    weights = state.get("state_dict", state)
    name = next(key for key, value in weights.items() if value.is_floating_point())
    weights[name] = weights[name] + 1
    torch.save(state, folder / "open_clip_pytorch_model.bin")
    one_pair = plus({"describe_model": 1}, EVALUATE_ONE_PAIR, {"compare_models": 1, "plot_comparisons": 1})
    assert planned_jobs(workdir) == plus(one_pair, FINISH_ONE)


def kill_tree(process):
    import psutil

    parent = psutil.Process(process.pid)
    # Snakemake first, so it cannot react to its job dying (record it, start another).
    for child in [parent] + parent.children(recursive=True):
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass
    process.wait()


def run_until(workdir, condition, timeout=300):
    """Start the workflow and SIGKILL it, jobs included, as soon as `condition()` holds."""
    import subprocess
    import sys
    import time

    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"}
    process = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--cores", "2"],
        cwd=workdir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            found = condition()
            if found:
                kill_tree(process)
                return found
            if process.poll() is not None:
                pytest.fail("the workflow finished before the moment to kill it came")
            time.sleep(0.002)
        pytest.fail("timed out waiting for the moment to kill the workflow")
    finally:
        if process.poll() is None:
            kill_tree(process)


def unlock(workdir):
    """What a user does after a killed run: Snakemake keeps its lock until told."""
    from snakemake_runner import snakemake

    assert snakemake(workdir, "--unlock").returncode == 0


def without_features(baseline, destination):
    """The finished baseline minus its features and everything computed from them."""
    import shutil

    workdir = copy_experiment(baseline, destination)
    for stage in ("features", "predictions", "experiments/small/scores"):
        shutil.rmtree(workdir / "results" / stage)
    for summary in workdir.glob("results/experiments/small/summary.*"):
        summary.unlink()
    return workdir


def test_killed_mid_extraction_keeps_finished_shards_and_resumes_to_the_same_bytes(baseline, tmp_path):
    """SIGKILL while an image shard is being written, one shard after the first: the shard being written
    leaves no finished-looking file, the finished one is kept, exactly the other two are planned, and the
    resumed run gathers the bytes of the unsharded baseline."""
    workdir = without_features(baseline, tmp_path / "experiment")
    edit_config(workdir, lambda c: c["extract"].update(shard_size=50))
    features = workdir / "results/features"
    tiny_features = {pair: workdir / folder for pair, folder in folders(baseline)["features"].items()}
    shards = tiny_features["tiny on shapes-test"] / "image-shards/by-50"

    def one_shard_done_another_being_written():
        done = sorted(p.name for p in shards.glob("[0-9]*.jsonl"))
        # With one core, a second shard writing means the first is recorded as finished
        # (the first one's own sidecar, written after its jsonl, does not count).
        writing = [p for p in shards.glob(".*.partial-*") if done and not p.name.startswith(f".{done[0]}.")]
        return (done[0], writing[0]) if writing else None

    done, partial = run_until(workdir, one_shard_done_another_being_written)
    final = partial.with_name(partial.name[1 : partial.name.index(".partial-")])
    # The kill lands a moment after the partial file was seen: if the writer renamed it whole in that moment,
    # the shard is finished (and still planned again: its job never ended). A partial left behind must stand
    # alone.
    if partial.exists():
        assert not final.exists(), f"{final} exists although its writer was killed mid-file"
    finished = (shards / done).stat().st_mtime_ns
    unlock(workdir)
    plan = snakemake_dry_run_text(workdir)
    planned_outputs = [line for line in plan.splitlines() if line.strip().startswith("output:")]
    planned_shards = [line for line in planned_outputs if str(shards.relative_to(workdir)) in line]
    # the finished shard is kept; exactly the other two of the three are still to do
    assert len(planned_shards) == 2 and not [line for line in planned_shards if line.endswith(f"/{done}")]
    run_jobs(workdir)
    assert not list(features.glob("**/.*.partial-*"))
    assert (shards / done).stat().st_mtime_ns == finished
    assert sorted(p.name for p in shards.glob("*.jsonl")) == ["0.jsonl", "1.jsonl", "2.jsonl"]
    for pair, folder in folders(baseline)["features"].items():
        for name in ("images.jsonl", "texts.jsonl"):
            assert (tiny_features[pair] / name).read_bytes() == (baseline / folder / name).read_bytes()
    assert planned_jobs(workdir) == {}


def snakemake_dry_run_text(workdir):
    from snakemake_runner import snakemake

    result = snakemake(workdir, "--dry-run")
    assert result.returncode == 0, result.stderr
    return result.stdout + result.stderr


def result_files(workdir):
    found = folders(workdir)
    return [
        found["checkpoints"]["tiny"],
        f"{found['models']['tiny']}/meta.json",
        f"{found['datasets']['cn-test']}/meta.json",
        f"{found['datasets']['shapes-test']}/meta.json",
        f"{found['features']['tiny on shapes-test']}/images.jsonl",
        f"{found['features']['tiny on cn-test']}/texts.jsonl",
        f"{found['predictions']['tiny on shapes-test']}/t2i.jsonl",
        f"{found['predictions']['tiny on shapes-test']}/i2t.jsonl",
        f"{found['predictions']['tiny on cn-test']}/t2i.jsonl",
        "results/experiments/small/scores/tiny/shapes-test/retrieval.json",
        "results/experiments/small/scores/tiny/cn-test/retrieval.json",
        "results/experiments/small/summary.csv",
        "results/experiments/small/summary.md",
    ]


def test_a_second_experiment_takes_the_models_and_features_from_the_shared_cache(baseline, output_cache, tmp_path):
    """The same experiment in another folder fetches what the baseline's run stored, and ends with its bytes.
    (That two clean runs give the same bytes, test_slurm shows, a cluster's run against a local one.)"""
    from snakemake_runner import JOB_CORES, snakemake

    second = small_experiment(tmp_path / "second")
    result = snakemake(second, "--cores", JOB_CORES, "--cache", env=output_cache)
    assert result.returncode == 0, result.stderr[-3000:]
    fetched = sorted(
        line.split()[3]
        for line in (result.stdout + result.stderr).splitlines()
        if line.startswith("Symlinking output file") and line.endswith("from cache.")
    )
    found = folders(second)
    assert fetched == sorted(
        [
            found["checkpoints"]["tiny"],
            *(
                f"{folder}/{f}"
                for folder in found["features"].values()
                for f in ("texts.jsonl", "texts.tokenization.json", "image-shards/by-0/0.jsonl", "images.jsonl")
            ),
        ]
    )
    extraction_logs = list((second / "logs/extract").glob("**/*.log")) + list((second / "logs/train").glob("*.log"))
    assert all(log.stat().st_size == 0 for log in extraction_logs)
    files = result_files(second)
    assert files == result_files(baseline)
    assert [f for f in files if (second / f).read_bytes() != (baseline / f).read_bytes()] == []


def test_a_precomputed_features_model_scores_like_the_model_that_made_them(baseline, tmp_path):
    workdir = copy_experiment(baseline, tmp_path / "experiment")
    add_features_model(workdir)
    run_jobs(workdir)
    for dataset in ("shapes-test", "cn-test"):
        scores = [
            json.loads((workdir / f"results/experiments/small/scores/{model}/{dataset}/retrieval.json").read_text())
            for model in ("tiny", "given")
        ]
        assert [{k: v for k, v in s.items() if k != "provenance"} for s in scores][0] == {
            k: v for k, v in scores[1].items() if k != "provenance"
        }
        assert scores[1]["provenance"]["model"]["features"] == {
            f"precomputed/{d}/{side}.jsonl": scores[1]["provenance"]["model"]["features"][
                f"precomputed/{d}/{side}.jsonl"
            ]
            for d in ("cn-test", "shapes-test")
            for side in ("images", "texts")
        }
    given = Path(folders(workdir)["models"]["given"]).name
    assert not (workdir / "results/features" / given).exists()  # its features are its files: nothing extracted
    assert planned_jobs(workdir) == {}


@pytest.mark.parametrize(("cores", "processes"), [("8", "6"), ("3", "2"), ("1", "1")])
def test_decode_pixels_decodes_in_every_core_the_extraction_beside_it_leaves(baseline, tmp_path, cores, processes):
    """A dry run forced to decode again shows each job's command: as many decoding processes as its threads, the
    cores less the two of the extraction beside it, at least two (Snakemake scales them down to --cores)."""
    workdir = copy_experiment(baseline, tmp_path / "experiment")
    result = snakemake(workdir, "--dry-run", "--cores", cores, "--forcerun", "decode_pixels")
    commands = [line for line in result.stdout.splitlines() if "-m clipeval decode-pixels " in line]
    assert result.returncode == 0 and len(commands) == 2, result.stdout + result.stderr
    assert all(f" --num-workers {processes} " in command for command in commands)


def test_the_small_experiment_ran_its_jobs_in_the_workflows_warm_servers(baseline):
    """Each of its jobs forked from a server of its kind (clipeval/warm_jobs/), the model check and every torch
    job from one; test_slurm.py finds the bytes of a cluster run, whose jobs start interpreters."""
    log = (baseline / "logs/warm_jobs.log").read_text().splitlines()
    assert sorted(log) == [
        *["warm plain-1 gather-features"] * 2,
        *["warm plain-1 plot-dataset"] * 2,
        "warm plain-1 report-tables",
        *["warm plain-1 retrieval-failures"] * 2,
        "warm plain-1 summarize",
        *["warm plain-2 make-topk-predictions"] * 4,  # a quarter of the cores, at least two
        *["warm plain-2 prepare"] * 3,  # the threads --cores 4 leaves beside the extraction jobs' two
        *["warm plain-2 score-retrieval"] * 2,
        "warm torch-portable-2 check-models",
        *["warm torch-portable-2 decode-pixels"] * 2,
        "warm torch-portable-2 describe-model",
        *["warm torch-portable-2 extract-features"] * 4,
        "warm torch-portable-2 train",
    ]
