"""tests/README.md names the suite's tiers as the suite has them: every marker, every default."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from .conftest import TIERS, default_tier

ROOT = Path(__file__).resolve().parent.parent


def test_the_readme_pyproject_and_conftest_name_the_same_tiers():
    readme = (ROOT / "tests" / "README.md").read_text()
    documented = re.findall(r"^\| `(\w+)` \|", readme, re.MULTILINE)
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    registered = [marker.split(":")[0] for marker in markers]
    assert documented == list(TIERS)
    assert set(TIERS) <= set(registered)


@pytest.mark.parametrize(
    ("path", "tier"),
    [
        ("tests/dynamodb/leases/test_heartbeat.py", "protocol"),
        ("tests/django/test_locks.py", "django"),
        ("tests/django/admin/test_admin_browser.py", "browser"),
        ("tests/chaos/test_checker.py", "chaos"),
        ("tests/installed/test_installed_package.py", "processes"),
        ("tests/test_readme.py", "unit"),
    ],
)
def test_a_module_without_a_tier_gets_its_folders(path, tier):
    assert default_tier(f"/work/x/{path}") == tier
