"""The reference pages of the site follow the code: every public name has an entry, with a docstring.

The pages name modules (``<!-- public names: MODULE -->``); the build hook writes one entry per name of
the module's ``__all__``. So the drift to catch is a public module without a page, a page whose entries
miss a name, and a name with nothing to say. The settings and check-id tables are held to ``conf.py`` and
the checks by tests/django/test_settings_docs.py; this module checks that those pages are in the site.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import griffe
import pytest

import dynalock_django
from dynalock_django.management.commands.dynalock import Command

from .docs_site import DOCS, build_hook, nav_pages, referenced_modules

PACKAGE = Path(dynalock_django.__file__).resolve().parent
# The protocol's inner modules are private: the Django layer may import only dynalock_django.dynamodb (an
# import-linter contract), whose __all__ is the protocol's public surface.
PRIVATE = re.compile(r"^dynalock_django\.dynamodb\.")


def modules_with_all() -> list[str]:
    """Every module of the package that assigns ``__all__`` (read from its source: nothing is imported)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        assigns = [node for node in tree.body if isinstance(node, ast.Assign | ast.AnnAssign)]
        targets = [t for node in assigns for t in (node.targets if isinstance(node, ast.Assign) else [node.target])]
        if any(isinstance(target, ast.Name) and target.id == "__all__" for target in targets):
            parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def public_objects() -> dict[str, object]:
    """``module.name -> object`` of every public name: each public module's ``__all__``."""
    hook = build_hook()
    return {
        f"{module}.{name}": getattr(importlib.import_module(module), name)
        for module in modules_with_all()
        if not PRIVATE.match(module)
        for name in hook.public_names(module)
    }


def test_every_public_name_has_a_reference_entry():
    """A name in a public module's ``__all__`` is shown on a page: its module's, or one that re-exports it."""
    hook = build_hook()
    referenced = referenced_modules()  # read once: it reads every page of the site
    shown = {}
    for page in set(referenced.values()):
        entries = re.findall(r"^::: ([\w.]+)$", hook.expand((DOCS / page).read_text()), flags=re.MULTILINE)
        assert entries, page
        for entry in entries:
            if entry in referenced:
                continue  # the module's docstring, atop its page
            module_name, name = entry.rsplit(".", 1)
            shown[id(getattr(importlib.import_module(module_name), name))] = entry
    missing = [name for name, value in public_objects().items() if id(value) not in shown]
    assert missing == []
    assert {"dynalock_django", "dynalock_django.dynamodb", "dynalock_django.testing"} <= set(referenced)


def test_the_public_modules_of_the_reference_have_an_all():
    found = modules_with_all()  # once: it parses every module of the package
    for module in ["dynalock_django", "dynalock_django.dynamodb", "dynalock_django.testing", "dynalock_django.tasks"]:
        assert module in found
    for module in ["dynalock_django.admin", "dynalock_django.signals", "dynalock_django.middleware"]:
        assert module in found


def test_every_entry_has_a_docstring_to_show():
    """What mkdocstrings shows of a name is its docstring: an entry without one says nothing."""
    loader = griffe.GriffeLoader(search_paths=[str(PACKAGE.parent)])
    package = loader.load("dynalock_django")
    loader.resolve_aliases(implicit=False, external=None)
    hook = build_hook()
    silent = []
    for module in referenced_modules():
        for name in hook.public_names(module):
            path = f"{module}.{name}".removeprefix("dynalock_django").lstrip(".")
            if not package[path].docstring:
                silent.append(f"{module}.{name}")
    assert silent == []


def test_a_referenced_module_without_all_is_a_build_error_naming_the_fix():
    with pytest.raises(ValueError, match=r"dynalock_django\.keys has no __all__: give it one"):
        build_hook().expand("<!-- public names: dynalock_django.keys -->")


def test_the_reference_pages_and_the_tables_held_to_the_code_are_in_the_site():
    pages = set(nav_pages())
    assert set(referenced_modules().values()) <= pages
    # settings.md is checked against conf.DEFAULTS and the emitted check ids (tests/django/test_settings_docs.py)
    assert {"django/settings.md", "django/commands.md", "reference/command.md", "operations.md"} <= pages


def test_sphinx_roles_of_docstrings_show_as_code_alone():
    html = ":func:<code>~dynalock_django.supervised.run</code> and :mod:<code>dynalock_django.testing</code>"
    assert build_hook().without_sphinx_roles(html) == "<code>run</code> and <code>dynalock_django.testing</code>"


def test_the_command_page_lists_exactly_the_parsers_sub_commands():
    """docs/django/commands.md's table, by hand, against the parser; its --help page is written from the parser."""
    usage = build_hook().command_usage()
    parsed = re.findall(r"^### `(\w+)`$", usage, flags=re.MULTILINE)
    table = (DOCS / "django" / "commands.md").read_text()
    documented = re.findall(r"^\| `(\w+)", table, flags=re.MULTILINE)
    assert "createtable" in parsed
    assert sorted(set(documented)) == sorted(parsed)
    assert "usage: manage.py dynalock" in usage
    assert Command.help in usage
