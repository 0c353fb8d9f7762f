"""The package's shape: small modules and classes with names that do not collide, and a map of them that matches."""

from __future__ import annotations

import ast
import collections
import re
from pathlib import Path

import dynalock_django

PACKAGE = Path(dynalock_django.__file__).parent
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
MAX_MODULE_LINES = 400
MAX_CLASS_LINES = 300


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_is_over_400_lines():
    sizes = {path.relative_to(PACKAGE).as_posix(): len(path.read_text().splitlines()) for path in modules()}
    assert {name: lines for name, lines in sizes.items() if lines > MAX_MODULE_LINES} == {}
    assert len(sizes) > 50  # the whole package was read


def test_no_class_is_over_300_lines():
    classes = {}
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
                classes[f"{path.relative_to(PACKAGE).as_posix()}:{node.name}"] = node.end_lineno - start + 1
    assert {name: lines for name, lines in classes.items() if lines > MAX_CLASS_LINES} == {}
    assert "dynamodb/lock_client.py:LockClient" in classes  # the whole package was read


def test_no_two_modules_or_classes_share_a_name():
    """One name, one thing. The exception tree is the Django layer's and the protocol's: it adds to the protocol's."""
    basenames = collections.Counter(path.name for path in modules() if path.name != "__init__.py")
    classes = collections.Counter(
        node.name
        for path in modules()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef) and node.name != "Meta"  # Django's inner options class
    )
    assert {name for name, count in basenames.items() if count > 1} == {"exceptions.py"}
    assert {name for name, count in classes.items() if count > 1} == set()


def test_docs_architecture_md_has_a_line_for_every_module_and_names_no_other():
    """A row ``| `admin/live_locks.py` | what it owns |`` per module; empty package markers need none."""
    documented = re.findall(r"^\| `([\w/]+\.py)` \| \S", ARCHITECTURE.read_text(), flags=re.MULTILINE)
    package = {path.relative_to(PACKAGE).as_posix() for path in modules() if path.read_text().strip()}
    assert len(documented) == len(set(documented))  # one line each
    assert package - set(documented) == set()  # every module is on the map
    assert set(documented) - package == set()  # and the map names only modules that exist
