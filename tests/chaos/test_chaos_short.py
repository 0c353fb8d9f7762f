"""The short fault-injection run, as part of the suite (the full one: make chaos).

``$DYNALOCK_TEST_CHAOS_PART`` (``K/N``) runs the Kth of N shares of the workloads: CI's two legs
run one half each, so every workload runs once a CI run. Unset, every workload runs.
"""

from __future__ import annotations

import os

import pytest

from . import workloads
from .__main__ import main, part

pytestmark = pytest.mark.chaos

PART_ENV = "DYNALOCK_TEST_CHAOS_PART"


@pytest.mark.slow
def test_the_short_fault_injection_run_passes(capsys):
    share = os.environ.get(PART_ENV, "1/1")
    code = main(["--short", "--part", share])
    report = capsys.readouterr()
    assert code == 0, report.out + report.err
    first, count = part(share)
    chosen = workloads.WORKLOADS[first - 1 :: count]
    assert all(f"== {w.name} " in report.out for w in chosen)
    # A control run shows what the fence is for: it breaks a property the fence then holds.
    for control in (w for w in chosen if w.control):
        [row] = [line for line in report.out.splitlines() if line.startswith(f"{control.name} ")]
        assert "control:" in row, row
