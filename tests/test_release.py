"""The package is ready to publish: its version is a release's, and CHANGELOG.md dates that release."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.version import Version

import dynalock_django

ROOT = Path(__file__).resolve().parent.parent


def test_the_version_is_a_release_the_changelog_dates():
    version = Version(dynalock_django.__version__)
    # pip skips pre-releases and development releases for `pip install dynalock-django`.
    assert not version.is_prerelease, f"{version} is not a release"
    assert version.local is None, f"{version} is a local version, which PyPI refuses"
    released = re.findall(r"^## \[([^\]]+)\] - \d{4}-\d{2}-\d{2}$", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert released, "CHANGELOG.md has no dated release section (## [X.Y.Z] - YYYY-MM-DD)"
    assert released[0] == dynalock_django.__version__, "the newest dated section of CHANGELOG.md is another version"
