"""The task chaos run, short, per framework: real workers, random SIGKILLs, redeliveries, retries (chaos.py).

Checked from the tasks' own records: no run overlaps another of its key, fencing tokens only grow,
every enqueued copy ran or skipped visibly, and two leases after the last worker died no key is held.
``python -m tests.django.tasks.chaos`` runs it longer and prints the table.
"""

from __future__ import annotations

import itertools
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
# What each framework's share of the chaos tier took on the shared 2-core machine (its run here, seconds), with
# the run that goes with it: Celery's beat processes (test_celery_beat_processes.py, 47 s) and dramatiq's
# requeue proof (test_dramatiq_requeue.py, 25 s). CI's legs split the frameworks by these (balanced_shares).
CI_SECONDS = {"celery": 30 + 47, "db_worker": 39, "huey": 27, "rq": 25, "dramatiq": 27 + 25, "django_q": 30}


def balanced_shares(costs: dict[str, float], shares: int) -> list[tuple[str, ...]]:
    """``costs``' names in ``shares`` groups whose largest total is the least it can be (every assignment
    tried: six names in two or three shares are 64 or 729 of them); in ``costs``' order within a group."""
    names = list(costs)
    best: tuple[float, tuple[int, ...]] | None = None
    for assignment in itertools.product(range(shares), repeat=len(names)):
        totals = [0.0] * shares
        for name, share in zip(names, assignment, strict=True):
            totals[share] += costs[name]
        if best is None or max(totals) < best[0]:
            best = (max(totals), assignment)
    assert best is not None
    return [tuple(name for name, share in zip(names, best[1], strict=True) if share == k) for k in range(shares)]


def frameworks_of_this_run() -> tuple[str, ...]:
    """Every framework; with ``$DYNALOCK_TEST_CHAOS_PART`` (K/N: CI's legs), the Kth of N shares of them,
    balanced by :data:`CI_SECONDS` (two shares: Celery, huey and rq; db_worker, dramatiq and django-q2).

    The tests that start a framework's real workers (test_celery_workers.py, test_db_worker.py,
    test_django_q_schedule.py) go with its share too: what they prove is of the queue and the adapter, which
    the django tier's in-process tests of every adapter (test_lock_task.py, test_huey_rq.py,
    test_dramatiq_actors.py, ...) check on every leg.
    """
    shared = os.environ.get(PART_ENV)
    if shared is None:
        return chaos.FRAMEWORKS
    share, shares = part(shared)
    return balanced_shares(CI_SECONDS, shares)[share - 1]


def with_share_of(framework: str) -> pytest.MarkDecorator:
    """The mark of a module that goes with ``framework``'s share of the chaos: skipped where that share is not
    in this run (CI: on the other leg; :func:`frameworks_of_this_run`)."""
    return pytest.mark.skipif(
        framework not in frameworks_of_this_run(),
        reason=f"{framework}'s share of the chaos runs on another CI leg (test_task_chaos.frameworks_of_this_run)",
    )


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
