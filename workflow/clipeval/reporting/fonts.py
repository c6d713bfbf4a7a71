"""The fonts figures draw text with: DejaVu Sans (matplotlib's own: Latin, Greek, Cyrillic, Hebrew, Arabic),
then Noto Sans CJK SC for Chinese, Japanese and Korean, from the `mplfonts` package. Matplotlib takes each
glyph from the first font in the list that has it, so Latin text looks as it always did and captions in
other scripts are drawn in their letters rather than as empty boxes."""

import importlib.util
from pathlib import Path

BASE_FAMILY = "DejaVu Sans"
# (package, file in its fonts/ folder): fonts from the package index that cover what the base font lacks.
FALLBACK_FILES = [("mplfonts", "NotoSansCJKsc-Regular.otf")]


def _installed(package: str, name: str) -> Path | None:
    """The font file a package ships, found without importing the package (mplfonts would import its CLI)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "fonts" / name
    return path if path.is_file() else None


def font_families() -> list[str]:
    """Register the fallback fonts that are installed with matplotlib; the family list to draw with."""
    from matplotlib import font_manager

    families = [BASE_FAMILY]
    for package, name in FALLBACK_FILES:
        path = _installed(package, name)
        if path is not None:
            font_manager.fontManager.addfont(str(path))
            families.append(font_manager.FontProperties(fname=str(path)).get_name())
    return families
