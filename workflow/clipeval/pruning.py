"""The shared artifacts of a results folder that no experiment uses any more.

A changed definition writes new files under a new key (planning/keys.py) and
leaves the old ones, which another experiment may still read. The folders
each experiment's record names (experiment.json, `folders`) are in use;
every other folder under the shared stages' directories is not: old keys,
and the name-keyed folders of clipeval before keys.
"""

import shutil
from pathlib import Path

from clipeval.experiments import EXPERIMENTS_DIR, RECORD_NAME, read_record

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


def used_folders(results: Path) -> set[Path]:
    """Every shared folder that an experiment's record names, and its pixels (under its dataset's key)."""
    used = set()
    for path in sorted(Path(results).glob(f"{EXPERIMENTS_DIR}/*/{RECORD_NAME}")):
        folders = read_record(path).get("folders", {})
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
    used = {results / folder.relative_to(folder.parts[0]) for folder in used_folders(results)}
    unused = []
    for directory, depth in SHARED_DIRECTORIES.items():
        pattern = "/".join(["*"] * depth)
        unused += [folder for folder in sorted((results / directory).glob(pattern)) if folder not in used]
    return unused


def delete_folders(folders: list[Path], results: Path) -> None:
    """Delete the folders, then the shared directories' folders they leave empty."""
    for folder in folders:
        shutil.rmtree(folder)
        parent = folder.parent
        while parent != Path(results) and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent


def folder_size(folder: Path) -> int:
    """Bytes in the folder's files (a link counts as itself, not as what it points to)."""
    return sum(path.lstat().st_size for path in folder.rglob("*") if not path.is_dir() or path.is_symlink())
