"""MkDocs hooks: the reference is written from the code at build time, so it cannot fall behind it.

Two markers, each alone on its line of a page:

- ``<!-- public names: MODULE -->`` becomes the module's docstring and one mkdocstrings entry
  (``::: MODULE.NAME``) per name of ``MODULE.__all__``, in that order: a name added to ``__all__``
  appears in the reference without a page edit. ``tests/test_docs_reference.py`` checks that every
  public module with an ``__all__`` has such a page.
- ``<!-- usage: manage.py dynalock -->`` becomes the command's ``--help`` and each sub-command's, from its
  argparse parser.

The modules are imported (``__all__`` is computed at run time: ``dynalock_django``'s is lazy), so Django is
set up first, with the settings of the build's environment or, without any, the few apps the package needs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

PUBLIC_NAMES = re.compile(r"^<!-- public names: (?P<module>[\w.]+) -->$", re.MULTILINE)
USAGE = re.compile(r"^<!-- usage: manage\.py dynalock -->$", re.MULTILINE)
# The docstrings name code with Sphinx's roles (:func:`~pkg.name`), which Markdown renders as a stray
# ":func:" before the code: shown as Sphinx shows them, the code alone (after "~", its last part).
SPHINX_ROLE = re.compile(r":(?:attr|class|data|exc|func|meth|mod|obj):<code>(?P<tilde>~)?(?P<path>[^<]*)</code>")
HELP_WIDTH = "100"  # argparse wraps at $COLUMNS: the same page on every terminal
MINIMAL_SETTINGS: dict[str, Any] = {
    "INSTALLED_APPS": [
        "django.contrib.contenttypes",
        "django.contrib.auth",
        "django.contrib.messages",
        "django.contrib.sessions",
        "django.contrib.admin",
        "dynalock_django",
    ],
    "DATABASES": {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
}


def set_up_django() -> None:
    """Make the package importable as a project uses it (its admin imports Django's models)."""
    import django
    from django.conf import settings

    if not settings.configured and "DJANGO_SETTINGS_MODULE" not in os.environ:
        settings.configure(**MINIMAL_SETTINGS)
    django.setup()


def public_names(module_name: str) -> list[str]:
    """``module.__all__`` without dunders (``__version__``): what the reference shows of that module."""
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    if names is None:
        raise ValueError(f"{module_name} has no __all__: give it one, listing its public names")
    return [name for name in names if not name.startswith("__")]


def reference_entries(module_name: str) -> str:
    """The module's docstring, then the mkdocstrings entries of its public names, one per name."""
    docstring = f"::: {module_name}\n    options:\n      members: false\n      show_root_heading: false"
    return "\n\n".join([docstring, *(f"::: {module_name}.{name}" for name in public_names(module_name))])


def command_usage() -> str:
    """``manage.py dynalock --help`` and each sub-command's, as fenced text blocks under their own headings."""
    from dynalock_django.management.commands.dynalock import Command

    parser = Command().create_parser("manage.py", "dynalock")
    # argparse keeps its sub-parsers on the (documented) action that add_subparsers returned, not publicly.
    [subcommands] = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    parts = ["```text", help_text(parser), "```"]
    for name, subparser in subcommands.choices.items():
        parts += ["", f"### `{name}`", "", "```text", help_text(subparser), "```"]
    return "\n".join(parts)


def help_text(parser: argparse.ArgumentParser) -> str:
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH
    try:
        out = StringIO()
        with redirect_stdout(out):
            parser.print_help()
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    return out.getvalue().rstrip()


def without_sphinx_roles(html: str) -> str:
    """``:func:<code>~a.b</code>`` as ``<code>b</code>``; ``:mod:<code>a.b</code>`` as ``<code>a.b</code>``."""

    def code(found: re.Match[str]) -> str:
        path = found["path"].rsplit(".", 1)[-1] if found["tilde"] else found["path"]
        return f"<code>{path}</code>"

    return SPHINX_ROLE.sub(code, html)


def expand(markdown: str) -> str:
    """A page's markdown with its markers replaced by what the code says."""
    markdown = PUBLIC_NAMES.sub(lambda found: reference_entries(found["module"]), markdown)
    return USAGE.sub(lambda _: command_usage(), markdown)


# ------------------------------------------------------------------------------------------- MkDocs's hooks


def on_config(config: Any) -> Any:
    # The checkout's package, the one mkdocstrings reads, whichever one the environment has installed.
    sys.path.insert(0, str(Path(config.config_file_path).resolve().parent))
    set_up_django()
    return config


def on_page_markdown(markdown: str, **_: Any) -> str:
    return expand(markdown)


def on_page_content(html: str, **_: Any) -> str:
    return without_sphinx_roles(html)
