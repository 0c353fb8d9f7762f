"""The documentation site as data, for the tests that hold it to the code: its pages, nav and build hook."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
MKDOCS_YML = ROOT / "mkdocs.yml"


def build_hook() -> ModuleType:
    """docs/hooks/reference.py, the module MkDocs runs (it is no package of the project's)."""
    spec = importlib.util.spec_from_file_location("docs_reference_hook", DOCS / "hooks" / "reference.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def nav_pages() -> list[str]:
    """Every page of mkdocs.yml's nav, as a path under docs/."""

    def walk(entry: object) -> list[str]:
        if isinstance(entry, str):
            return [entry]
        if isinstance(entry, list):
            return [page for item in entry for page in walk(item)]
        if isinstance(entry, dict):
            return [page for value in entry.values() for page in walk(value)]
        return []

    # mkdocs.yml has no YAML tags: the plain loader reads it.
    return walk(yaml.safe_load(MKDOCS_YML.read_text())["nav"])


def referenced_modules() -> dict[str, str]:
    """``module -> page`` for each ``<!-- public names: MODULE -->`` marker of a nav page."""
    marker = build_hook().PUBLIC_NAMES
    found = {}
    for page in nav_pages():
        for match in re.finditer(marker, (DOCS / page).read_text()):
            found[match["module"]] = page
    return found
