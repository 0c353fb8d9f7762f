"""The task chaos run, short, per framework: real workers, random SIGKILLs, redeliveries, retries (chaos.py).

Checked from the tasks' own records: no run overlaps another of its key, fencing tokens only grow,
every enqueued copy ran or skipped visibly, and two leases after the last worker died no key is held.
``python -m tests.django.tasks.chaos`` runs it longer and prints the table.
"""

from __future__ import annotations

import os

import pytest

from ...chaos.__main__ import part
from ...chaos.test_chaos_short import PART_ENV
from . import chaos
from .task_history import render

pytestmark = [pytest.mark.chaos, pytest.mark.uses_dynalock, pytest.mark.slow]

SECONDS = 12.0
# At least, enqueued a few a beat (0 for Celery and db_worker: their own pace); each one accounted for.
COPIES = {"huey": 200, "rq": 200, "dramatiq": 200, "django_q": 200}
# What CI's legs run (each the Kth of N shares): the frameworks whose runs fit its 20 minutes. huey's, rq's,
# dramatiq's and django-q2's runs (60 to 115 s each for their 200 copies on 2 cores) run in a plain `make test`
# and in `make chaos`, not yet on CI.
CI_FRAMEWORKS = ("celery", "db_worker")


def frameworks_of_this_run() -> tuple[str, ...]:
    """Every framework; with ``$DYNALOCK_TEST_CHAOS_PART`` (K/N: CI's legs), the Kth of N shares of them.

    CI runs Celery on its first leg and django-tasks-db (Django 6's own Tasks framework) on its second (of
    :data:`CI_FRAMEWORKS`); the tests of each framework's workers (test_celery_workers.py, test_db_worker.py,
    test_huey_rq.py) run on both.
    """
    shared = os.environ.get(PART_ENV)
    if shared is None:
        return chaos.FRAMEWORKS
    share, shares = part(shared)
    return CI_FRAMEWORKS[share - 1 :: shares]


@pytest.mark.parametrize("framework", frameworks_of_this_run())
def test_killed_redelivered_and_retried_copies_never_overlap_or_stick(framework, dynalock, tmp_path):
    copies = COPIES.get(framework, 0)
    report = chaos.run(framework, dynalock, tmp_path, seconds=SECONDS, seed=1, workers=3, copies=copies)
    print("\n" + render([report]))
    if report.failures():
        print(chaos.worker_logs(tmp_path))

    assert report.failures() == []
    assert report.enqueued >= copies
    # The chaos happened, or the properties above prove nothing.
    assert report.killed_runs >= 1
    assert report.skips >= 1
    assert report.freed_after, "no run followed a killed one on its key"
    assert report.redeliveries >= 1
    assert report.limited_peak == {"pair": 2}  # limit=2 was reached (and never passed: no overlap above)
    if framework in ("celery", "dramatiq", "django_q"):  # the queue retries a failed copy itself
        assert report.retries >= 1
    # The bound: two leases after the last worker died, a fresh client holds every key (huey: with no
    # flush, no -f: a SIGKILLed consumer's keys are free once their lease has run out).
    assert report.last_freed_after is not None
    assert report.last_freed_after <= 2
