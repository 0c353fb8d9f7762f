"""The Celery app of the beat test's processes (test_celery_beat_processes.py): a task due every second.

``celery -A tests.django.tasks.beat_app beat -S dynalock_django.celery.LeaderScheduler`` on several
"hosts", and one worker that appends, for each run, the due time its message carries and the wall
time it ran (``due ran``) to the file named by ``DYNALOCK_TEST_RUNS``.
"""

import os
import time
from pathlib import Path
from typing import Any

import django

django.setup()

from celery import Celery  # noqa: E402  (after django.setup(): the scheduler uses the Django layer)

from dynalock_django.celery import DUE_HEADER  # noqa: E402

from .environment import BROKER, RUNS  # noqa: E402

app = Celery("beat-proof", broker=os.environ.get(BROKER, "memory://"))
app.conf.update(
    beat_schedule={"every-second": {"task": "tests.django.tasks.beat_app.record_due", "schedule": 1.0}},
    broker_connection_retry_on_startup=True,
    worker_prefetch_multiplier=1,
)


@app.task(bind=True)
def record_due(self: Any) -> None:
    due = getattr(self.request, DUE_HEADER)  # as docs/django/celery-beat.md says a task reads it
    with Path(os.environ[RUNS]).open("a") as runs:
        runs.write(f"{due} {time.time()}\n")
