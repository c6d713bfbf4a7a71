"""Source formats: one module per format a benchmark ships in, named after it.

Each module has a FORMAT record: the settings of its config entry (which are
also the options of `clipeval prepare FORMAT`), the dataset files it writes,
and `read`, which turns the settings into images, captions and classes. The
workflow makes one prepare rule per record, so a new format is a module here
plus its entry in config/schema.yaml (docs/ARCHITECTURE.md, "Adding a source
format").

Standard library only: Snakemake reads the records while it plans.
"""

import pathlib
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass

# What a format writes besides images.lmdb and meta.json.
CAPTIONS = ("texts",)
CLASSES = ("labels", "classes")
# Compositionality sets: every candidate caption, and the examples that choose among them (data/choices.py).
CHOICES = ("texts", "examples")

# How the workflow tracks a setting: a file by its content, a folder by the
# content of every file under it, a value by itself.
FILE, FOLDER, VALUE = "file", "folder", "value"


@dataclass(frozen=True)
class Setting:
    """One key of a format's config entry, and the option `--key` of `clipeval prepare FORMAT`."""

    key: str
    help: str
    kind: str = VALUE
    type: Callable = str
    required: bool = False
    default: object = None
    choices: tuple | None = None
    many: bool = False
    # For a FILE: the files that stand for it (default: the path itself).
    tracked_files: Callable[[str], list[str]] | None = None

    @property
    def flag(self) -> str:
        return "--" + self.key.replace("_", "-")

    def files_to_track(self, value) -> list[str]:
        return self.tracked_files(value) if self.tracked_files else [str(value)]


IMAGE_DIRECTORY = Setting("images", "the image directory", kind=FOLDER, type=pathlib.Path, required=True)
FIRST_IMAGE_ID = Setting("first_image_id", "ids count up from here in file order", type=int, default=0)
TEMPLATES = Setting(
    "templates",
    "a prompt template per line, {} standing for the class name",
    kind=FILE,
    type=pathlib.Path,
    required=True,
)


@dataclass
class PreparedSource:
    """What a format reads, and `data.dataset.write_dataset` writes.

    images: (image_id, encoded bytes) pairs; captions: a `Captions` or None;
    source: the settings as recorded in meta.json; classes: None, or (labels
    as (image_id, label) pairs, class names, templates); examples: None, or the
    compositionality examples (data.choices.Example) that choose among the captions.
    """

    images: Iterable[tuple[int, bytes]]
    captions: object
    source: dict
    classes: tuple | None = None
    examples: list | None = None


@dataclass(frozen=True)
class SourceFormat:
    name: str
    help: str
    writes: tuple[str, ...]
    settings: tuple[Setting, ...]
    read: Callable[[dict], PreparedSource]


def format_names() -> list[str]:
    """Every source format, from the module names, without importing them."""
    return sorted(info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_"))


def source_format(name: str) -> SourceFormat:
    # __import__, as in cli.py: a job imports only its own format's module.
    return __import__(f"{__name__}.{name}", fromlist=["FORMAT"]).FORMAT
