"""The Makefile does what README.md says: ``make test`` lints and builds the docs before the suite."""

from __future__ import annotations

import re
import shutil

import pytest

from .make_plan import ROOT, make

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")


def test_make_test_lints_and_builds_the_docs() -> None:
    # A Makefile variable that make predefines (its built-in LINT = lint) ignores `?=`: the docs were never built.
    planned = make("-n", "test")
    assert "mkdocs build --strict" in planned
    assert "ruff check" in planned


def test_the_checks_can_be_left_out_as_ci_does() -> None:
    variable = re.search(r"^test: \$\((\w+)\)", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert variable, "make test's first prerequisite is no longer the checks' variable"
    planned = make("-n", "test", f"{variable[1]}=")
    assert "mkdocs build" not in planned
    assert f" {variable[1]}= " in (ROOT / ".ci/run").read_text()


def test_no_makefile_variable_set_with_default_is_one_make_predefines() -> None:
    # make's own database, with no Makefile (it exits 2: "no targets"), is what it predefines.
    built_in = set(re.findall(r"^# default\n(\w+) :?= ", make("-p", "-f", "/dev/null", check=False), re.MULTILINE))
    defaults = set(re.findall(r"^(\w+) \?=", (ROOT / "Makefile").read_text(), re.MULTILINE))
    assert not defaults & built_in, f"make predefines {sorted(defaults & built_in)}: `?=` never sets them"


def pytest_commands(planned: str) -> list[str]:
    return [line for line in planned.splitlines() if " -m pytest " in line]


def test_make_test_fast_pays_for_no_coverage_unless_asked() -> None:
    # On Python 3.11 coverage's C tracer costs 2.4 times the tests' CPU: the minute-by-minute loop leaves it out.
    (fast,) = pytest_commands(make("-n", "test-fast"))
    assert "--no-cov" in fast
    assert "--cov " not in f"{fast} "
    (measured,) = pytest_commands(make("-n", "test-fast", "COVERAGE=1"))
    assert "--cov " in measured
    assert "--no-cov" not in measured


def test_make_test_still_measures_coverage_and_gates_it() -> None:
    commands = pytest_commands(make("-n", "test", "CHECKS="))
    assert len(commands) == 2
    assert all("--cov " in command and "--no-cov" not in command for command in commands)
    # The last part reports and gates (pyproject.toml's fail_under); the first only collects.
    assert "--cov-fail-under" not in commands[-1]
