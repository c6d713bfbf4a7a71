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
