"""lock_task under Django's Tasks framework with real workers: two django-tasks-db ``db_worker`` processes.

(Django 6's own ``django.tasks``, or the django-tasks backport on Django 5.2: django-tasks-db runs on either.)
The database is a file both workers share; the tasks record their runs and skips, and the properties
are read from them: no two runs of a key overlap, tokens only grow, every copy ran or visibly skipped.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dynalock_django.client import get_client

from ..processes import ROOT, manage_py_environment
from .test_task_chaos import with_share_of
from .workers import count_lines, overlaps, read_runs, tokens_increase

pytestmark = [
    pytest.mark.processes,
    pytest.mark.uses_dynalock,
    pytest.mark.slow,
    with_share_of("db_worker"),
]

ENQUEUE = """
import django
django.setup()
from tests.django.tasks.jobs import django_job
for account, copies in ((1, 8), (2, 4)):
    for _ in range(copies):
        django_job.enqueue(account, 0.3)
"""


def test_copies_under_two_db_workers_never_overlap_and_every_skip_is_recorded(dynalock, tmp_path):
    runs = tmp_path / "runs"
    env = manage_py_environment(
        dynalock,
        "tests.django.tasks.db_worker_settings",
        DYNALOCK_TEST_DATABASE=str(tmp_path / "tasks.sqlite3"),
        DYNALOCK_TEST_RUNS=str(runs),
    )
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=60)
    subprocess.run([sys.executable, "-c", ENQUEUE], cwd=ROOT, env=env, check=True, timeout=60)
    # --batch: each worker exits once the queue is empty
    worker = [*manage, "db_worker", "--batch", "--interval", "0.05", "--no-startup-delay"]
    workers = [subprocess.Popen(worker, cwd=ROOT, env=env, stderr=subprocess.PIPE) for _ in range(2)]
    try:
        for process in workers:
            _, errors = process.communicate(timeout=60)
            assert process.returncode == 0, errors.decode()[-3000:]
    finally:
        for process in workers:
            if process.poll() is None:
                process.kill()
                process.wait()

    done = read_runs(runs)
    skipped = count_lines(Path(str(runs) + ".skipped"))
    assert len(done) + skipped == 12
    assert overlaps(done) == 0
    assert tokens_increase(done)
    assert {run.name for run in done} == {"django-1", "django-2"}
    client = get_client()
    assert all(lock.is_released for lock in client.scan())  # no stuck key
    print(f"\ndb_worker: runs={len(done)} skips={skipped} overlaps=0 stuck=0")
