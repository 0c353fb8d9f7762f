"""The short fault-injection run, as part of the suite (the full one: make chaos)."""

from __future__ import annotations

import pytest

from .__main__ import main


@pytest.mark.slow
def test_the_short_fault_injection_run_passes(capsys):
    code = main(["--short"])
    report = capsys.readouterr()
    assert code == 0, report.out + report.err
    assert "control: fence needed" in report.out
