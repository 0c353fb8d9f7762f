"""docs/django/settings.md is true to the code: its settings table and its system-check table."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import dynalock_django
from dynalock_django.conf import DEFAULTS

SETTINGS_DOC = Path(__file__).resolve().parents[2] / "docs" / "django" / "settings.md"
PACKAGE = Path(dynalock_django.__file__).resolve().parent
CHECK_ID = re.compile(r"^(?:dynalock\.)?([EW]\d{3})$")


def table_rows(heading: str) -> list[list[str]]:
    """The cells of the first table under ``heading``, its header and divider left out."""
    lines = f"\n{SETTINGS_DOC.read_text()}".split(f"\n{heading}\n", 1)[1].splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows[2:]


def ids_the_package_can_emit() -> set[str]:
    """Every check id written in the package's code: ``"dynalock.E001"``, or ``"E004"`` formatted into one."""
    ids = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and (found := CHECK_ID.match(node.value)):
                ids.add(f"dynalock.{found[1]}")
    return ids


def test_the_settings_table_lists_every_key_with_its_default():
    documented = {}
    for key, default, *_ in table_rows("# Settings"):
        documented[key.strip("`")] = ast.literal_eval(default.strip("`"))
    assert documented == DEFAULTS


def test_the_check_table_lists_exactly_the_ids_the_code_emits():
    documented = set()
    for first_cell, *_ in table_rows("## System checks"):
        # "`dynalock.E004` / `E005` / `E007`" names three; "(deploy)" and "(admin)" say when it runs
        documented.update(f"dynalock.{code}" for code in re.findall(r"`(?:dynalock\.)?([EW]\d{3})`", first_cell))
    emitted = ids_the_package_can_emit()
    assert {"dynalock.E001", "dynalock.E004", "dynalock.W020"} <= emitted  # the code was read
    assert documented == emitted
