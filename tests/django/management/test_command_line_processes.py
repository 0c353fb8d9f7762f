"""``manage.py dynalock`` as a user types it: Django's options anywhere, each sub-command's own usage."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ..processes import ROOT

pytestmark = pytest.mark.processes


def manage_py(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "dynalock", *arguments], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_settings_and_traceback_after_the_subcommand_are_djangos():
    # A settings module that does not exist: an error only if the option reached Django.
    missing = manage_py("createtable", "--dry-run", "--settings", "no_such_settings_module")
    assert "No module named 'no_such_settings_module'" in missing.stderr
    done = manage_py("createtable", "--dry-run", "--settings", "testproject.settings", "--traceback", "-v", "2")
    assert done.returncode == 0, done.stderr
    assert '"TableName"' in done.stdout


def test_a_subcommands_error_prints_its_own_usage():
    refused = manage_py("release", "testapp.account", "1", "extra", "--force")
    assert refused.returncode == 2
    assert "usage: manage.py dynalock release" in refused.stderr
    assert "manage.py dynalock release: error: unrecognized arguments: extra" in refused.stderr
