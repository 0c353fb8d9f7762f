"""CI's dists, built once a run, stand in for a leg's own only while they are this checkout's, file for file."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from . import dists

pytestmark = pytest.mark.unit


@pytest.fixture
def checkout(tmp_path):
    root = tmp_path / "checkout"
    (root / "package").mkdir(parents=True)
    (root / "package" / "module.py").write_text("VALUE = 1\n")
    (root / "README.md").write_text("readme\n")
    (root / ".gitignore").write_text("*.egg-info/\n")
    (root / "package.egg-info").mkdir()
    (root / "package.egg-info" / "SOURCES.txt").write_text("stale\n")  # ignored: never part of a build
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    subprocess.run(["git", "-C", str(root), "add", "."], check=True, timeout=60)
    return root


def copy(checkout, tmp_path):
    source = tmp_path / "built" / "source"
    copied = dists.checkout_files(checkout)
    for name in copied:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(checkout / name, source / name)
    (source / "package.egg-info").mkdir()
    (source / "package.egg-info" / "PKG-INFO").write_text("")  # what the build wrote there: not a difference
    return source, copied


def test_a_copy_of_the_checkout_has_no_differences(checkout, tmp_path):
    assert dists.checkout_files(checkout) == [".gitignore", "README.md", "package/module.py"]
    assert dists.differences(*copy(checkout, tmp_path), checkout) == []


def test_an_edit_a_new_file_or_a_deleted_one_since_the_build_is_a_difference(checkout, tmp_path):
    source, copied = copy(checkout, tmp_path)
    (checkout / "package" / "module.py").write_text("VALUE = 2\n")  # the same size: its bytes differ
    (checkout / "package" / "new.py").write_text("")  # untracked, not ignored: a build would take it
    (checkout / "README.md").unlink()
    assert dists.differences(source, copied, checkout) == ["package/module.py", "package/new.py", "README.md"]


def test_the_handed_in_dists_are_refused_when_the_checkout_changed_since(tmp_path, monkeypatch):
    built = tmp_path / "built"
    source = built / "source"
    copied = dists.checkout_files()
    for name in copied:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(dists.ROOT / name, source / name)
    (built / dists.COPIED).write_text("".join(f"{name}\n" for name in copied))
    sdist, wheel = built / "dynalock_django-0.1.0.tar.gz", built / "dynalock_django-0.1.0-py3-none-any.whl"
    sdist.touch()
    wheel.touch()
    monkeypatch.setenv(dists.ENV, str(built))
    assert dists.handed_in() == dists.Dists(source, sdist, wheel)

    with (source / "README.md").open("a") as readme:
        readme.write("\nan edit since the build\n")
    with pytest.raises(AssertionError, match="README.md"):
        dists.handed_in()

    monkeypatch.delenv(dists.ENV)
    assert dists.handed_in() is None
