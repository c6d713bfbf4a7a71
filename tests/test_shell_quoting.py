"""Config strings and the file names a config gives reach each job's command as single literal words.

Snakemake runs every job's command through bash. Each config value and path is quoted in the rules
(`{...:q}`), so shell syntax in any of them is passed on as text. Names (datasets, models, experiments)
are refused at planning unless they fit the name rule (tests/test_planning.py has the messages).
"""

import json
import shlex
import shutil

import pytest
import yaml
from snakemake_runner import copy_workflow, edit_config, shared_path, snakemake
from sources import write_cnclip

pytestmark = pytest.mark.workflow

# Each would create a file named PWNED if a shell read it as syntax.
HOSTILE = "a $(touch PWNED) `touch PWNED`; touch PWNED & 'q' \"d\" \\ *"
ARCH = f"clipeval-tiny{HOSTILE}"


def hostile_experiment(workdir, checkpoint):
    """Every string of the config, and every file name it gives, carries HOSTILE."""
    images, texts = write_cnclip(workdir / "sources")
    images, texts = (
        images.rename(images.with_name(f"images {HOSTILE}.tsv")),
        texts.rename(texts.with_name(f"texts {HOSTILE}.jsonl")),
    )
    weights = shutil.copy(checkpoint, workdir / f"weights {HOSTILE}.pt")
    feature_files = {kind: workdir / f"{kind} {HOSTILE}.jsonl" for kind in ("images", "texts")}
    for path in feature_files.values():
        path.write_text(json.dumps({"image_id": 1, "feature": [1.0]}) + "\n")
    config = {
        "experiment": "quoting",
        "datasets": {
            "hostile": {
                "format": "cnclip",
                "task": "retrieval",
                "images": str(images.relative_to(workdir)),
                "texts": str(texts.relative_to(workdir)),
            }
        },
        "models": {
            "odd-arch": {"arch": ARCH, "pretrained": str(weights.relative_to(workdir))},
            "odd-weights": {"arch": "clipeval-tiny", "pretrained": str(weights.relative_to(workdir))},
            "odd-start": {
                "arch": "clipeval-tiny",
                "train": {
                    "dataset": "hostile",
                    "from": str(weights.relative_to(workdir)),
                    "epochs": 1,
                    "batch_size": 2,
                    "lr": 0.001,
                    "seed": 0,
                },
            },
            "odd-features": {
                "features": {"hostile": {kind: str(path.relative_to(workdir)) for kind, path in feature_files.items()}}
            },
        },
        "extract": {"device": "cpu", "num_workers": 0},
    }
    edit_config(workdir, lambda current: (current.clear(), current.update(config)))
    return config


def job_commands(output):
    """The words of each `python -m clipeval` command a dry run printed, as bash would split them."""
    prefix = "Shell command: python -m clipeval "
    return [
        shlex.split(line.removeprefix("Shell command: ")) for line in output.splitlines() if line.startswith(prefix)
    ]


def test_config_strings_and_file_names_reach_commands_as_single_words_and_run_nothing(tmp_path, tiny_checkpoint):
    workdir = copy_workflow(tmp_path / "experiment")
    config = hostile_experiment(workdir, tiny_checkpoint)

    planned = snakemake(workdir, "--dry-run", "--printshellcmds")
    assert planned.returncode == 0, planned.stdout + planned.stderr
    commands = job_commands(planned.stdout)
    words = {word for command in commands for word in command}
    given = [
        ARCH,
        config["models"]["odd-weights"]["pretrained"],
        config["datasets"]["hostile"]["images"],
        config["datasets"]["hostile"]["texts"],
        *config["models"]["odd-features"]["features"]["hostile"].values(),
    ]
    assert [value for value in given if value not in words] == []
    assert {command[3] for command in commands} >= {
        "prepare", "describe-model", "describe-features", "summarize", "train",
    }  # fmt: skip
    train = next(command for command in commands if command[3] == "train")
    assert train[train.index("--from") + 1] == config["models"]["odd-start"]["train"]["from"]

    # The run's model check reads them first, as single words: the odd arch is refused by name before any job.
    run = snakemake(workdir, "--cores", "2")
    assert run.returncode == 1
    assert (run.stdout + run.stderr).splitlines()[-1] == (
        f"config error: models.odd-arch.arch: unknown open_clip arch {ARCH!r} (see open_clip.list_models())"
    )
    assert not (workdir / "results").exists()
    # Without it, the jobs that read those strings first: each takes them as text.
    del config["models"]["odd-arch"]
    edit_config(workdir, lambda current: (current.clear(), current.update(config)))
    targets = [
        shared_path(workdir, "dataset_meta", dataset="hostile"),
        shared_path(workdir, "model_meta", model="odd-weights"),
    ]
    run = snakemake(workdir, "--cores", "2", *targets)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    assert (workdir / targets[0]).is_file()
    assert json.loads((workdir / targets[1]).read_text())["arch"] == "clipeval-tiny"
    assert sorted(path.name for path in tmp_path.rglob("PWNED*")) == []
    assert yaml.safe_load((workdir / "config/config.yaml").read_text()) == config
