"""Class folders (ImageNet-val or CIFAR-as-PNG style) with a class-names file and a templates file.

The class-names file has one class per line, in class-index order, either
`folder<TAB>class name` or just `class name`. Plain names are matched to
folders of the same name; when no name is a folder name (ImageNet's wnid
folders), the names pair with the folders in sorted order, as torchvision's
ImageFolder does, and only their counts can be checked. Images are every
non-hidden file in a class folder (a folder inside one is an error),
ordered by class index then file name; ids count up from first_image_id in
that order.
"""

from pathlib import Path

from clipeval.data.image_files import read_image_files
from clipeval.data.sources import (
    CLASSES,
    FILE,
    FIRST_IMAGE_ID,
    FOLDER,
    TEMPLATES,
    PreparedSource,
    Setting,
    SourceFormat,
)
from clipeval.data.text_lists import nonblank_lines, read_templates
from clipeval.errors import ClipevalError


def read_classnames(path) -> list[tuple[str | None, str]]:
    """[(folder or None, class name)] in class-index order."""
    entries = []
    for number, line in nonblank_lines(path, "class names"):
        folder, tab, name = line.partition("\t")
        folder, name = (folder.strip(), name.strip()) if tab else (None, folder.strip())
        if not name or (tab and not folder):
            raise ClipevalError(f"{path}:{number}: expected 'folder<TAB>class name' or 'class name'")
        entries.append((folder, name))
    if not entries:
        raise ClipevalError(f"{path}: no class names")
    names = [name for _, name in entries]
    if len(set(names)) != len(names):
        repeated = next(name for name in names if names.count(name) > 1)
        raise ClipevalError(f"{path}: class name {repeated!r} appears twice")
    return entries


def class_folders(root, entries, classnames_path) -> list[Path]:
    """The folder of each class, in class-index order; every folder must be a class."""
    root = Path(root)
    if not root.is_dir():
        raise ClipevalError(f"{root}: image directory not found")
    folders = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    explicit = [folder for folder, _ in entries if folder is not None]
    if explicit and len(explicit) != len(entries):
        raise ClipevalError(f"{classnames_path}: give a folder for every class or for none")
    if explicit:
        wanted = explicit
    elif any(name in folders for _, name in entries):
        wanted = [name for _, name in entries]
    elif len(folders) == len(entries):
        wanted = folders
    else:
        raise ClipevalError(f"{root}: {len(folders)} class folders but {len(entries)} class names in {classnames_path}")
    missing = [folder for folder in wanted if folder not in folders]
    if missing:
        raise ClipevalError(
            f"{root}: no folder {missing[0]!r} for a class in {classnames_path} ({len(missing)} missing)"
        )
    extra = sorted(set(folders) - set(wanted))
    if extra:
        raise ClipevalError(f"{root}: folder {extra[0]!r} is not a class in {classnames_path} ({len(extra)} such)")
    return [root / folder for folder in wanted]


def image_files(folders: list[Path], first_image_id: int) -> tuple[list[tuple[int, Path]], list[tuple[int, int]]]:
    """([(image_id, file)], [(image_id, label)]) over the class folders in order."""
    files, labels = [], []
    for label, folder in enumerate(folders):
        entries = sorted(p for p in folder.iterdir() if not p.name.startswith("."))
        nested = [p for p in entries if p.is_dir()]  # a FIFO, device or broken link: read_image_files refuses it
        if nested:
            raise ClipevalError(f"{nested[0]}: a class folder holds images only, not folders")
        for path in entries:
            image_id = first_image_id + len(files)
            files.append((image_id, path))
            labels.append((image_id, label))
    return files, labels


def read(settings) -> PreparedSource:
    entries = read_classnames(settings["classnames"])
    templates = read_templates(settings["templates"])
    files, labels = image_files(
        class_folders(settings["images"], entries, settings["classnames"]), settings["first_image_id"]
    )
    source = {
        "format": "imagefolder",
        "images": str(settings["images"]),
        "classnames": str(settings["classnames"]),
        "templates": str(settings["templates"]),
    }
    classes = (labels, [name for _, name in entries], templates)
    return PreparedSource(read_image_files(files, settings["images"]), None, source, classes)


FORMAT = SourceFormat(
    name="imagefolder",
    help="class folders + class names + templates (classification)",
    writes=CLASSES,
    settings=(
        Setting("images", "one folder per class", kind=FOLDER, type=Path, required=True),
        Setting(
            "classnames",
            "a class per line, in index order: 'folder<TAB>name' or 'name'",
            kind=FILE,
            type=Path,
            required=True,
        ),
        TEMPLATES,
        FIRST_IMAGE_ID,
    ),
    read=read,
)
