"""clipeval prune-results: the shared folders no experiment's record names."""

from conftest import run_cli

from clipeval.storage.jsonl import write_json


def record(name, dataset_key, model_key, training_key):
    features = f"results/features/{model_key}/{dataset_key}"
    return {
        "experiment": name,
        "config_files": [f"config/{name}.yaml"],
        "datasets": {"flickr": {"format": "karpathy", "task": "retrieval"}},
        "models": {"vit": {}},
        "scores": {"vit on flickr": {}},
        "folders": {
            "datasets": {"flickr": f"results/datasets/{dataset_key}"},
            "models": {"vit": f"results/models/{model_key}"},
            "checkpoints": {"vit": f"results/checkpoints/{training_key}/checkpoint.pt"},
            "features": {"vit on flickr": features},
            "predictions": {"vit on flickr": f"results/predictions/{model_key}/{dataset_key}/top-10"},
        },
    }


def make(results, *folders):
    for folder in folders:
        (results / folder).mkdir(parents=True, exist_ok=True)
        (results / folder / "file").write_bytes(b"x" * 1000)


def test_prune_lists_then_deletes_exactly_what_no_record_names(tmp_path):
    results = tmp_path / "results"
    write_json(results / "experiments/first/experiment.json", record("first", "d1", "m1", "t1"))
    write_json(results / "experiments/second/experiment.json", record("second", "d1", "m2", "t1"))
    used = [
        "datasets/d1",
        "pixels/d1",
        "models/m1",
        "models/m2",
        "checkpoints/t1",
        "features/m1/d1",
        "features/m2/d1",
        "predictions/m1/d1",
        "predictions/m2/d1",
    ]
    # An old dataset and model definition, a model's features on a dataset no longer used, the old layout's scores.
    unused = ["checkpoints/t0", "datasets/d0", "features/m0/d0", "features/m1/d0", "pixels/d0", "scores/vit"]
    make(results, *used, *unused)
    listed = run_cli("prune-results", "--results", results)
    assert listed.returncode == 0
    assert listed.stdout.splitlines() == [
        f"       0.0 MB  {results}/{folder}"
        for folder in ["datasets/d0", "checkpoints/t0", "pixels/d0", "features/m0/d0", "features/m1/d0", "scores/vit"]
    ] + ["       0.0 MB  in 6 folders no experiment's record names: unused (--delete deletes them)"]
    assert all((results / folder).is_dir() for folder in unused)

    assert run_cli("prune-results", "--results", results, "--delete").returncode == 0
    assert [folder for folder in used if not (results / folder / "file").is_file()] == []
    assert [folder for folder in unused if (results / folder).exists()] == []
    assert not (results / "features/m0").exists() and not (results / "scores").exists()  # left empty: gone too
    assert run_cli("prune-results", "--results", results).stdout == (
        f"every shared result in {results} is used by an experiment\n"
    )


def test_a_damaged_record_is_named_not_a_traceback(tmp_path):
    results = tmp_path / "results"
    damaged = {**record("first", "d1", "m1", "t1"), "folders": {"datasets": ["results/datasets/d1"]}}
    write_json(results / "experiments/first/experiment.json", damaged)
    result = run_cli("prune-results", "--results", results, "--delete")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"clipeval: error: {results}/experiments/first/experiment.json: not an experiment record"
        " (folders is not a mapping of names to folders)\n"
    )


def test_a_folder_without_experiment_records_is_not_pruned(tmp_path):
    folder = tmp_path / "project"
    make(folder, "models/mine", "checkpoints/run", "datasets/flickr")
    result = run_cli("prune-results", "--results", folder, "--delete")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"clipeval: error: {folder}: not a results folder (it has no experiments/ of experiment records)\n"
    )
    assert all((folder / name / "file").is_file() for name in ("models/mine", "checkpoints/run", "datasets/flickr"))


def test_a_checkpoint_another_experiment_reads_is_kept(tmp_path):
    """An experiment's trained checkpoint that another names as `pretrained:` (or in a series' glob, or as the
    start of a fine-tune) is in use, even once the experiment that trained it is gone or trains another."""
    results = tmp_path / "results"
    reader = {
        **record("reader", "d1", "m1", "t1"),
        "config": {
            "models": {
                "tuned": {"arch": "ViT-B-32", "pretrained": "results/checkpoints/t0/checkpoint.pt"},
                "run": {"arch": "ViT-B-32", "checkpoints": "results/checkpoints/series/epoch_*.pt"},
                "again": {"arch": "ViT-B-32", "train": {"from": "results/checkpoints/start/checkpoint.pt"}},
            }
        },
    }
    write_json(results / "experiments/reader/experiment.json", reader)
    make(results, "datasets/d1", "pixels/d1", "models/m1", "checkpoints/t1", "features/m1/d1", "predictions/m1/d1")
    make(results, "checkpoints/t0", "checkpoints/series", "checkpoints/start", "checkpoints/old")
    (results / "checkpoints/series/epoch_1.pt").write_bytes(b"x")
    result = run_cli("prune-results", "--results", results, "--delete", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"       0.0 MB  {results}/checkpoints/old"
    assert (results / "checkpoints/t0/file").is_file() and (results / "checkpoints/series/epoch_1.pt").is_file()
    assert (results / "checkpoints/start/file").is_file()
    assert not (results / "checkpoints/old").exists()


def test_nothing_is_deleted_while_a_workflow_runs_here(tmp_path):
    results = tmp_path / "results"
    write_json(results / "experiments/first/experiment.json", record("first", "d1", "m1", "t1"))
    make(results, "datasets/d0")
    locks = tmp_path / ".snakemake/locks"
    locks.mkdir(parents=True)
    (locks / "0.input.lock").write_text("")
    assert run_cli("prune-results", "--results", results).returncode == 0  # listing is harmless
    result = run_cli("prune-results", "--results", results, "--delete")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"clipeval: error: {locks}: a workflow is running in {tmp_path}: delete once it has finished"
        " (or, if none runs, once `snakemake --unlock` has removed its lock)\n"
    )
    assert (results / "datasets/d0/file").is_file()


def test_a_linked_folder_is_unlinked_not_emptied(tmp_path):
    results = tmp_path / "results"
    write_json(results / "experiments/first/experiment.json", record("first", "d1", "m1", "t1"))
    elsewhere = tmp_path / "big-disk/features"
    make(elsewhere.parent, "features")
    (results / "features/m0").mkdir(parents=True)
    (results / "features/m0/d0").symlink_to(elsewhere, target_is_directory=True)
    result = run_cli("prune-results", "--results", results, "--delete")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].endswith("in 1 folders no experiment's record names: deleted")
    assert not (results / "features/m0").exists() and (elsewhere / "file").is_file()
