"""The Celery app of the worker processes the tests start: ``celery -A tests.django.tasks.celery_app worker``.

Django is set up first (the tasks take their locks through its settings). Every copy a worker
process begins (before its lock is asked for) is written to ``DYNALOCK_TEST_RUNS + ".prerun"``
and, in the chaos run, as a ``begin`` event (tests/django/tasks/chaos_jobs.py).
"""

import os
import time
from pathlib import Path
from typing import Any

import django
from celery.signals import task_failure, task_prerun, task_received, task_retry

django.setup()

from . import chaos_jobs  # noqa: E402  (after django.setup(); registers the chaos tasks)
from .environment import RUNS  # noqa: E402
from .jobs import app  # noqa: E402


def write_prerun(task_id: str, task: Any, **kwargs: Any) -> None:
    """When a worker process begins a copy: ``task_id pid monotonic``, and the chaos run's ``begin`` event."""
    if os.environ.get(RUNS):
        with Path(os.environ[RUNS] + ".prerun").open("a") as prerun:
            prerun.write(f"{task_id} {os.getpid()} {time.monotonic()}\n")
    chaos_jobs.record("begin", id=task_id, attempt=int(task.request.retries or 0))


def write_received(request: Any, **kwargs: Any) -> None:
    """When a worker's main process takes a copy from the broker (it is in kombu's unacknowledged set by then):
    a copy never received was lost before any worker held it (task_history.lost_by_the_broker)."""
    chaos_jobs.record("received", id=str(request.id))


def write_failure(task_id: str, exception: BaseException, **kwargs: Any) -> None:
    chaos_jobs.record_failure(task_id, exception, final=True)


def write_retry(request: Any, reason: BaseException | str, **kwargs: Any) -> None:
    chaos_jobs.record_failure(str(request.id), getattr(reason, "exc", None) or reason, final=False)


task_prerun.connect(write_prerun)
task_received.connect(write_received)
task_failure.connect(write_failure)
task_retry.connect(write_retry)

__all__ = ["app"]
