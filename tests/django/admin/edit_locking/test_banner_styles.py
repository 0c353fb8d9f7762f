"""Every state the change page's edit-lock banner can be in has a colour of its own in the page's style."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import dynalock_django

PACKAGE = Path(dynalock_django.__file__).resolve().parent
CHANGE_PAGE = PACKAGE / "admin/edit_locking/change_page.py"
TEMPLATE = PACKAGE / "templates/admin/dynalock_django/edit_lock/change_form.html"
SCRIPT = PACKAGE / "static/dynalock_django/edit_lock.js"


def server_modes() -> set[str]:
    """The modes the server renders a page in: the strings ``_mode`` returns, read from its source."""
    [mode] = [node for node in ast.walk(ast.parse(CHANGE_PAGE.read_text())) if getattr(node, "name", "") == "_mode"]
    returns = [node.value for node in ast.walk(mode) if isinstance(node, ast.Return)]
    return {
        c.value
        for value in returns
        for c in ast.walk(value)
        if isinstance(c, ast.Constant) and isinstance(c.value, str)
    }


def test_every_banner_state_of_the_server_and_the_script_is_styled():
    modes = server_modes()
    script_states = set(re.findall(r'say\("(\w+)"', SCRIPT.read_text()))
    styled = set(re.findall(r"\.dynalock-(\w+)\b", TEMPLATE.read_text()))
    assert modes >= {"edit", "view", "lost", "outage"}  # the parse found what the page can render
    assert script_states >= {"free", "idle", "unreachable"}
    assert (modes | script_states) - styled == set()
