"""The benchmarks the docs tell a reader to run exist, and take the options the docs give them.

The docs quote figures measured with ``python -m tests.benchmarks.NAME [--OPTION ...]``: a renamed
module or a dropped option would leave a reader a command that fails, and figures nobody can measure again.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

from .docs_site import DOCS, ROOT

COMMAND = re.compile(r"python -m (tests\.benchmarks(?:\.\w+)?)((?: --[\w-]+(?:[ =][\w,.]+)?)*)")
OPTION = re.compile(r"--[\w-]+")


def commands() -> list[tuple[str, str, list[str]]]:
    """``(page, module, options)`` of every benchmark command in the docs and the README."""
    pages = [*sorted(DOCS.rglob("*.md")), ROOT / "README.md"]
    return [
        (str(page.relative_to(ROOT)), match[1], OPTION.findall(match[2]))
        for page in pages
        for match in COMMAND.finditer(page.read_text())
    ]


def options_of(module: str) -> set[str]:
    """The ``--options`` the module's argument parser adds (read from its source: nothing is run)."""
    spec = importlib.util.find_spec(module)
    assert spec is not None
    assert spec.origin is not None
    path = Path(spec.origin)
    if path.name == "__init__.py":
        path = path.with_name("__main__.py")
    tree = ast.parse(path.read_text())
    return {
        argument.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
        for argument in node.args
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str) and argument.value.startswith("--")
    }


def test_the_docs_name_benchmarks():
    """The check below has something to check: the docs quote measured figures with their commands."""
    found = commands()
    assert any(module == "tests.benchmarks.client_cpu" and "--segments" in options for _, module, options in found)


def test_every_benchmark_command_in_the_docs_names_a_module_and_options_it_has():
    wrong = []
    for page, module, options in commands():
        if importlib.util.find_spec(module) is None:
            wrong.append(f"{page}: no module {module}")
            continue
        unknown = sorted(set(options) - options_of(module))
        if unknown:
            wrong.append(f"{page}: {module} has no option {', '.join(unknown)}")
    assert not wrong, "\n".join(wrong)
