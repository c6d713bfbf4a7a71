"""Checkpoint series: a model entry whose `checkpoints` glob names a training run's files becomes one model per
file, ordered by the step its name carries.

`run: {arch: ViT-B-32, checkpoints: logs/run/checkpoints/epoch_*.pt}` becomes
the models `run.epoch_1`, `run.epoch_2`, … , each the entry the user would
write by hand (`{arch, pretrained: FILE}` with the series' precision and
preprocessing), so a member shares its features with that entry and a new
file adds only its own jobs. A model this config trains with
`train: {every_epoch: true}` becomes one model per epoch the same way, each
trained to its epoch (`train: {…, epoch: K}`). The series themselves are kept
in the config under SERIES_KEY, {series: [[step, model], …]} in step order,
for the summary and the report.
"""

import glob
import os
from pathlib import Path

from clipeval.errors import ClipevalError
from clipeval.following import READY_KEY
from clipeval.models.checkpoint_files import checkpoint_step, member_name
from clipeval.planning.config_errors import location

SERIES_KEY = "checkpoint_series"
# A member takes the series' entry less the glob, with its file as `pretrained`.
SERIES_GLOB = "checkpoints"
# A trained model's settings: each epoch's checkpoint a member; a member's epoch.
EVERY_EPOCH, EPOCH = "every_epoch", "epoch"
# The most checkpoints a series evaluates: each is some ten jobs per dataset; 5,000 planned 40,007 jobs in a
# six-minute dry run.
MAX_SERIES_MEMBERS = 1_000


def series_members(series: str, pattern: str, matches: list[str]) -> list[tuple[int, str, str]]:
    """(step, model name, checkpoint path) of every file the glob matched, in step order; a ClipevalError names
    the key and the file when a file has no step, or two have the same."""
    key = location(("models", series, SERIES_GLOB))
    if not matches:
        raise ClipevalError(f"{key}: no file matches {pattern!r} (looked from {Path.cwd()})")
    members, by_step = [], {}
    for match in sorted(matches):
        path = Path(match)
        step = checkpoint_step(path)
        if step is None:
            raise ClipevalError(
                f"{key}: {match}: the file's name has no step number (epoch_3.pt, step-5000.pt); narrow the"
                " pattern to the numbered files (epoch_[0-9]*.pt)"
            )
        if step in by_step:
            raise ClipevalError(f"{key}: {by_step[step]} and {match} both have step {step}")
        by_step[step] = match
        # A path without a folder or a known suffix would read as an open_clip tag.
        pretrained = match if "/" in match else f"./{match}"
        members.append((step, member_name(series, path), pretrained))
    return sorted(members)


def expand_checkpoint_series(config: dict, find=None) -> None:
    """Replace each series entry of config["models"] (in place, keeping the models' order) by its members, and
    record the series under SERIES_KEY. `find(pattern)` lists the matching files (default: glob). With
    READY_KEY, only the files it lists are members, and a series with none yet is left out, with the `evaluate`
    entries that name it."""
    find = find or (lambda pattern: [path for path in glob.glob(pattern, recursive=True) if Path(path).is_file()])
    ready = ready_files(config[READY_KEY]) if READY_KEY in config else None
    models, series, left_out = {}, {}, set()
    for name, entry in config["models"].items():
        if entry.get("train", {}).get(EVERY_EPOCH):
            series[name] = []
            for epoch, member, member_entry in epoch_members(name, entry):
                if member in config["models"] or member in models:
                    raise ClipevalError(
                        f"{location(('models', name, 'train', EVERY_EPOCH))}: its member {member!r} has the name of"
                        " another model"
                    )
                models[member] = member_entry
                series[name].append([epoch, member])
            continue
        if SERIES_GLOB not in entry:
            models[name] = entry
            continue
        pattern = entry[SERIES_GLOB]
        shared = {key: value for key, value in entry.items() if key != SERIES_GLOB}
        matches = find(pattern)
        if ready is not None:
            matches = [match for match in matches if os.path.abspath(match) in ready]
            if not matches:
                left_out.add(name)
                continue
        series[name] = []
        if len(matches) > MAX_SERIES_MEMBERS:
            raise ClipevalError(
                f"{location(('models', name, SERIES_GLOB))}: {pattern!r} matches {len(matches):,} files, more than the"
                f" {MAX_SERIES_MEMBERS:,} checkpoints a series evaluates: narrow the pattern (every tenth:"
                " epoch_*0.pt)"
            )
        for step, member, pretrained in series_members(name, pattern, matches):
            if member in config["models"] or member in models:
                raise ClipevalError(
                    f"{location(('models', name, SERIES_GLOB))}: its member {member!r} has the name of another model"
                )
            models[member] = {**shared, "pretrained": pretrained}
            series[name].append([step, member])
    if not models:
        raise ClipevalError(f"{READY_KEY}: {config[READY_KEY]} lists no checkpoint of any series yet")
    config["models"] = models
    config[SERIES_KEY] = series
    _expand_evaluate(config, series, left_out)


def config_name(config: dict, model: str) -> str:
    """The name the user's config gives a model: a series member's is its series'."""
    for name, members in config.get(SERIES_KEY, {}).items():
        if any(member == model for _, member in members):
            return name
    return model


def epoch_members(series: str, entry: dict) -> list[tuple[int, str, dict]]:
    """(epoch, model name, entry) of each epoch of a trained series: the entry trains to that epoch."""
    train = {key: value for key, value in entry["train"].items() if key != EVERY_EPOCH}
    if train["epochs"] > MAX_SERIES_MEMBERS:
        raise ClipevalError(
            f"{location(('models', series, 'train', EVERY_EPOCH))}: {train['epochs']:,} epochs, more than the"
            f" {MAX_SERIES_MEMBERS:,} checkpoints a series evaluates"
        )
    return [
        (epoch, member_name(series, f"epoch_{epoch}"), {**entry, "train": {**train, EPOCH: epoch}})
        for epoch in range(1, train["epochs"] + 1)
    ]


def ready_files(listing: str) -> set[str]:
    """The absolute paths a ready list names, one a line."""
    try:
        lines = Path(listing).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        why = getattr(error, "strerror", None) or error
        raise ClipevalError(f"{READY_KEY}: {listing}: cannot read the list of checkpoints ({why})") from None
    return {os.path.abspath(line) for line in lines if line}


def _expand_evaluate(config: dict, series: dict, left_out: set) -> None:
    """`evaluate` entries that name a series name each of its members; those of a series left out go."""
    if "evaluate" not in config:
        return
    expanded = []
    for entry in config["evaluate"]:
        if entry["model"] in left_out:
            continue
        members = series.get(entry["model"])
        expanded += [{**entry, "model": model} for _, model in members] if members else [entry]
    config["evaluate"] = expanded
