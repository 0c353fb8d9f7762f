"""`make demo` installs the demo's extra only, and that extra holds everything the demo imports."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import shutil
import sys
import tomllib
from pathlib import Path

import pytest

from .make_plan import make

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "dynalock-django"


def extra(name: str) -> set[str]:
    """The distributions an extra of the package brings, its own extras unfolded (names in lower case)."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    found: set[str] = set()
    for requirement in extras[name]:
        distribution, _, nested = re.match(r"([A-Za-z0-9_.-]+)(\[([^\]]+)\])?", requirement).groups()
        if distribution.lower() == PACKAGE:
            found |= {d for each in nested.split(",") for d in extra(each.strip())}
        else:
            found.add(distribution.lower())
    return found


def imported_by_the_demo() -> set[str]:
    """Top-level modules the test project and manage.py import that are neither Python's, Django's nor ours."""
    ours = {"django", "dynalock_django", "testproject", "__future__"}
    modules: set[str] = set()
    for path in [ROOT / "manage.py", *sorted((ROOT / "testproject").rglob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return {module for module in modules if module not in ours and module not in sys.stdlib_module_names}


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_demo_on_a_fresh_clone_installs_the_demo_extra_not_the_development_one(tmp_path):
    planned = make("-n", "demo", f"VENV={tmp_path / 'venv'}")
    installs = [line for line in planned.splitlines() if "pip install" in line and " -e " in line]
    assert installs, planned
    assert all('-e ".[demo]"' in line for line in installs), installs


def test_the_demo_extra_holds_what_the_demo_imports():
    distributions = importlib.metadata.packages_distributions()
    needed = {distributions[module][0].lower() for module in imported_by_the_demo()}
    assert needed  # django-environ, at least: the test project's settings read the environment with it
    assert needed <= extra("demo")
    assert "moto" in extra("demo")  # the embedded local endpoint (LocalDynamoDB) the demo starts


def test_the_demo_extra_leaves_the_development_tools_out():
    assert extra("demo").isdisjoint({"pytest", "playwright", "mypy", "ruff", "celery", "hypothesis"})
    assert extra("demo") <= extra("dev")  # make test's set holds the demo's: after it, make demo installs nothing
