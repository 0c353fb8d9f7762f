"""The sdist and the wheel of this checkout, built as ``python -m build`` does in a fresh clone.

``python -m tests.installed.dists DIR`` builds them into DIR (a clean copy of the checkout in
DIR/source, the two archives beside it): CI (.ci/run) builds them once, beside its installs, and
hands DIR to both legs' installed-package tests in ``$DYNALOCK_TEST_DISTS``, where each leg built
its own before (20-30 s of a leg's servers part). Those tests take DIR only if its copy is still
this checkout, file for file; without the variable they build their own.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENV = "DYNALOCK_TEST_DISTS"
COPIED = "source.files"  # beside the archives: the names copied into source/


@dataclass(frozen=True)
class Dists:
    source: Path  # the tree they were built from
    sdist: Path
    wheel: Path


def checkout_files(root: Path = ROOT) -> list[str]:
    """What git would check out (today's edits and new files included): no stale *.egg-info or build/."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return sorted(name for name in filter(None, listed.split("\0")) if (root / name).is_file())  # not deleted


def build(directory: Path) -> Dists:
    """Copy the checkout into ``directory/source``; build the sdist, then the wheel from it, beside the copy."""
    source = directory / "source"
    names = checkout_files()
    for name in names:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    (directory / COPIED).write_text("".join(f"{name}\n" for name in names))  # the build adds its egg-info
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(directory), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"python -m build exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return found(directory)


def found(directory: Path) -> Dists:
    (sdist,), (wheel,) = list(directory.glob("*.tar.gz")), list(directory.glob("*.whl"))
    return Dists(directory / "source", sdist, wheel)


def differences(source: Path, copied: list[str], root: Path = ROOT) -> list[str]:
    """The checkout's files that ``source`` (where ``copied`` were copied) lacks or holds in another
    version, then those it was copied beyond them."""
    ours, taken = checkout_files(root), set(copied)
    changed = [
        name
        for name in ours
        if name not in taken
        or not (source / name).is_file()
        or not filecmp.cmp(root / name, source / name, shallow=False)
    ]
    return changed + sorted(taken - set(ours))


def handed_in() -> Dists | None:
    """The dists CI built for this run (``$DYNALOCK_TEST_DISTS``), or None when the variable is unset."""
    directory = os.environ.get(ENV)
    if not directory:
        return None
    dists = found(Path(directory))
    stale = differences(dists.source, (Path(directory) / COPIED).read_text().splitlines())
    if stale:
        raise AssertionError(f"${ENV} was built from another tree than this checkout: {stale[:10]}")
    return dists


if __name__ == "__main__":
    print(build(Path(sys.argv[1])).wheel)
