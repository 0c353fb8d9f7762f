"""What the Makefile would run (``make -n``), as a reader's shell would plan it, for the tests that read it."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def make(*arguments: str, check: bool = True) -> str:
    """What make prints (``-n``: nothing runs), from the repository's root.

    Under ``make test CHECKS=`` (CI) make hands its command-line variables down, through MAKEFLAGS and as
    environment variables of its recipes: this make inherits neither, or it would plan what CI asked for
    rather than what the Makefile says.
    """
    settable = set(re.findall(r"^(\w+) \?=", (ROOT / "Makefile").read_text(), re.MULTILINE))
    inherited = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", *settable}
    environment = {name: value for name, value in os.environ.items() if name not in inherited}
    done = subprocess.run(
        ["make", "--no-print-directory", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=check,
        timeout=60,
        env=environment,
    )
    return done.stdout
