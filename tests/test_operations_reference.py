"""docs/operations.md, the reference of metrics, spans and loggers, names every one the code has.

Read from the code, not listed here: each ``dynalock.*`` string of the telemetry module (instruments,
their attributes, span and event names) and each logger the package gets by name.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import dynalock_django

PACKAGE = Path(dynalock_django.__file__).resolve().parent
OPERATIONS = PACKAGE.parent / "docs" / "operations.md"
TELEMETRY_NAME = re.compile(r"^dynalock\.[a-z_]+(?:\.[a-z_]+)*$")
LOGGER_NAME = re.compile(r"^dynalock_django(?:\.[a-z_]+)*$")


def strings(path: Path) -> set[str]:
    return {
        node.value
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


def logger_names() -> set[str]:
    """The names given to ``logging.getLogger("...")`` anywhere in the package."""
    names = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "getLogger"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and LOGGER_NAME.match(str(node.args[0].value))
            ):
                names.add(node.args[0].value)
    return names


def test_every_metric_span_and_attribute_name_is_documented():
    modules = (PACKAGE / "dynamodb" / "telemetry.py", PACKAGE / "counters.py")  # the protocol's, the Django layer's
    names = {name for module in modules for name in strings(module) if TELEMETRY_NAME.match(name)}
    assert {"dynalock.acquire.duration", "dynalock.requests", "dynalock.outcome"} <= names  # the code was read
    text = OPERATIONS.read_text()
    assert sorted(name for name in names if f"`{name}`" not in text) == []


def documented(logger: str, text: str) -> bool:
    """Named in full, or as the page lists them after the first: ``.heartbeat``."""
    return f"`{logger}`" in text or f"`{logger.removeprefix('dynalock_django')}`" in text


def test_every_logger_is_documented():
    names = logger_names()
    assert "dynalock_django.heartbeat" in names  # the code was read
    text = OPERATIONS.read_text()
    assert sorted(name for name in names if not documented(name, text)) == []
