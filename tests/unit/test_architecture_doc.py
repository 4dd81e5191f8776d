"""docs/ARCHITECTURE.md is the design a newcomer needs: it names every module of the package and
no file outside the repository (a clone has nothing beside it)."""
from __future__ import annotations

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "tensorweave")
DOC = os.path.join(ROOT, "docs", "ARCHITECTURE.md")


def _text() -> str:
    with open(DOC, encoding="utf-8") as f:
        return f.read()


def _modules() -> list:
    """(folder, stem) of every module: folder relative to the package with a trailing slash ('' at
    the top), stem without .py ('__init__' for a package's own file)."""
    out = []
    for root, dirs, files in os.walk(PACKAGE):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        folder = os.path.relpath(root, PACKAGE).replace(os.sep, "/")
        folder = "" if folder == "." else folder + "/"
        out += [(folder, f[:-3]) for f in files if f.endswith(".py")]
    return sorted(out)


def _paragraphs(text: str) -> list:
    """Lines with their indented continuation lines joined (a list item is one paragraph)."""
    return re.split(r"\n(?! )", text)


def _named(text: str, folder: str, stem: str) -> bool:
    """A module is named by its path (`ops/math/binary.py`), or, in a paragraph that names its
    folder in backticks, by its file name in backticks; a package's __init__ by its folder."""
    if stem == "__init__":
        return f"`{folder}`" in text or folder == ""
    if re.search(rf"(?<![\w/.]){re.escape(folder + stem)}\.py", text):   # not the tail of a longer path
        return True
    return any(f"`{folder}`" in paragraph and f"`{stem}.py`" in paragraph for paragraph in _paragraphs(text))


def test_every_module_of_the_package_is_named():
    text = _text()
    missing = [f"{folder}{stem}.py" for folder, stem in _modules() if not _named(text, folder, stem)]
    assert not missing, f"docs/ARCHITECTURE.md does not name: {', '.join(missing)}"


def test_names_no_file_outside_the_repository():
    text = _text()
    outside = re.findall(r"[^\s`(]*\.\./[^\s`)]*|[^\s`(]*\bshared/[^\s`)]*", text)
    assert not outside, f"docs/ARCHITECTURE.md names files outside the repository: {outside}"
