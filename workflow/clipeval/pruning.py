"""The shared artifacts of a results folder that no experiment uses any more.

A changed definition writes new files under a new key (planning/keys.py) and
leaves the old ones, which another experiment may still read. The folders
each experiment's record names (experiment.json, `folders`) are in use, and
so is any folder holding a file a record's models read (`pretrained:`, a
fine-tune's `from:` or a checkpoint series, such as a checkpoint another
experiment trained); every
other folder under the shared stages' directories is not: old keys, and the
name-keyed folders of clipeval before keys. Only a folder with experiment
records is pruned, and never while a workflow holds it.
"""

import glob
import os
import shutil
from pathlib import Path

from clipeval.errors import ClipevalError
from clipeval.experiments import EXPERIMENTS_DIR, RECORD_NAME, read_record

# Where Snakemake keeps the lock of a run in progress, in the folder it runs in (the results folder's parent).
LOCKS = Path(".snakemake/locks")

# Each shared stage's directory under results/, and how many levels below it
# one artifact's folder is (features/MODEL_KEY/DATASET_KEY/, …).
# `scores` is where clipeval kept scores before they became each experiment's.
SHARED_DIRECTORIES = {
    "datasets": 1,
    "checkpoints": 1,
    "models": 1,
    "pixels": 1,
    "features": 2,
    "predictions": 2,
    "scores": 1,
}


def check_prunable(results: Path, deleting: bool) -> None:
    """Refuse a folder that holds no experiment records (it is not a results folder, and every folder in it
    would look unused), and deleting while a workflow runs there (its outputs in progress look unused)."""
    results = Path(results)
    if not (results / EXPERIMENTS_DIR).is_dir():
        raise ClipevalError(f"{results}: not a results folder (it has no {EXPERIMENTS_DIR}/ of experiment records)")
    locks = results.parent / LOCKS
    if deleting and locks.is_dir() and any(locks.iterdir()):
        raise ClipevalError(
            f"{locks}: a workflow is running in {results.parent or '.'}: delete once it has finished"
            " (or, if none runs, once `snakemake --unlock` has removed its lock)"
        )


def model_files(record: dict, run_folder: Path) -> list[Path]:
    """The files a record's models read, as the record names them from the folder its run ran in: each
    `pretrained:` path, each fine-tune's `from:` path, and each checkpoint series' matches."""
    files = []
    config = record.get("config")
    models = config.get("models") if isinstance(config, dict) else None
    for entry in models.values() if isinstance(models, dict) else ():
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("pretrained"), str) and entry["pretrained"]:
            files.append(Path(entry["pretrained"]))
        train = entry.get("train")
        if isinstance(train, dict) and isinstance(train.get("from"), str) and train["from"]:
            files.append(Path(train["from"]))
        if isinstance(entry.get("checkpoints"), str):
            files += map(Path, glob.glob(entry["checkpoints"], root_dir=run_folder))
    return files


def used_folders(results: Path) -> set[Path]:
    """Every shared folder that an experiment's record names, its pixels (under its dataset's key), and the
    files its models read (the folders holding them are in use too)."""
    used = set()
    for path in sorted(Path(results).glob(f"{EXPERIMENTS_DIR}/*/{RECORD_NAME}")):
        record = read_record(path)
        used.update(file for file in model_files(record, Path(results).parent) if file.parts)
        folders = record.get("folders", {})
        for section, named in folders.items():
            for folder in named.values():
                folder = Path(folder).parent if section == "checkpoints" else Path(folder)
                if section == "predictions":  # …/top-K/: the folder of a pair's lists is its parent
                    folder = folder.parent
                used.add(folder)
                if section == "datasets":
                    used.add(folder.parent.parent / "pixels" / folder.name)
    return used


def unused_folders(results: Path) -> list[Path]:
    """The shared folders under `results` that no experiment's record names, in path order."""
    results = Path(results)
    # A record names its folders from the working directory of its run: results/…
    used = {
        absolute(path if path.is_absolute() else results / path.relative_to(path.parts[0]))
        for path in used_folders(results)
    }
    unused = []
    for directory, depth in SHARED_DIRECTORIES.items():
        pattern = "/".join(["*"] * depth)
        for folder in sorted((results / directory).glob(pattern)):
            here = absolute(folder)
            if here not in used and not any(here in path.parents for path in used):
                unused.append(folder)
    return unused


def absolute(path: Path) -> Path:
    """The path from the root, without following links (a linked folder is its link)."""
    return Path(os.path.abspath(path))


def delete_folders(folders: list[Path], results: Path) -> None:
    """Delete the folders (a link to a folder is removed, not what it points to), then the shared directories'
    folders they leave empty. What cannot be deleted stops it, in one line naming the path."""
    for folder in folders:
        try:
            if folder.is_symlink():
                folder.unlink()
            else:
                shutil.rmtree(folder)
        except OSError as error:
            raise ClipevalError(f"{error.filename or folder}: cannot delete ({error.strerror or error})") from None
        parent = folder.parent
        while parent != Path(results) and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent


def folder_size(folder: Path) -> int:
    """Bytes in the folder's files (a link counts as itself, not as what it points to)."""
    if folder.is_symlink():
        return folder.lstat().st_size
    return sum(path.lstat().st_size for path in folder.rglob("*") if not path.is_dir() or path.is_symlink())
