"""dynalock_django exports every name its docs import, each resolving lazily, and nothing else.

The names come from the docs and from the package's own lazy table, never from a
list written here: renaming or removing a public name needs only the package and
its docs to agree. /work/shared/DESIGN.md is left out: it also names what later
issues build (``lock_objects``).
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import dynalock_django

ROOT = Path(__file__).resolve().parents[2]
DOCS = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]
# ``from dynalock_django import a, b`` or ``from dynalock_django import (a, b)``, over several lines.
IMPORT = re.compile(r"^from dynalock_django import \(?([\w,\s]+?)\)?$", re.MULTILINE)
LAZY = dynalock_django._LAZY  # the package's own table: name -> the module defining it


def names_the_docs_import() -> set[str]:
    names = set()
    for doc in DOCS:
        for group in IMPORT.findall(doc.read_text()):
            names.update(name for name in re.split(r"[,\s]+", group) if name)
    return names


def names_type_checkers_see() -> dict[str, str]:
    """``name -> module`` of the imports under ``if TYPE_CHECKING:`` in the package's __init__."""
    tree = ast.parse(Path(dynalock_django.__file__).read_text())
    [block] = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    return {
        alias.asname or alias.name: f".{node.module}"
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def test_every_name_the_docs_import_is_exported():
    imported = names_the_docs_import()
    assert {"lock_object", "requires_lock"} <= imported  # the docs were read
    assert imported - set(dynalock_django.__all__) == set()


def test_every_exported_name_is_public_and_named_in_the_docs():
    exported = [name for name in dynalock_django.__all__ if name != "__version__"]
    assert len(exported) == len(set(exported))  # no duplicates
    assert [name for name in exported if name.startswith("_")] == []
    text = "\n".join(doc.read_text() for doc in DOCS)
    assert [name for name in exported if not re.search(rf"\b{name}\b", text)] == []


def test_all_dir_and_the_lazy_table_agree():
    assert sorted(dynalock_django.__all__) == sorted(["__version__", *LAZY])
    assert dir(dynalock_django) == sorted(dynalock_django.__all__)
    # and type checkers see the same names, from the same modules, as the lazy imports give at run time
    assert names_type_checkers_see() == LAZY


def test_every_lazy_name_resolves_to_what_its_module_defines():
    for name, module in LAZY.items():
        value = getattr(dynalock_django, name)
        assert value is getattr(importlib.import_module(module, "dynalock_django"), name), name


def test_an_unknown_name_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError, match="'dynalock_django' has no attribute 'lock_everything'"):
        dynalock_django.lock_everything  # noqa: B018
