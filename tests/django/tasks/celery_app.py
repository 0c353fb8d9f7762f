"""The Celery app of the worker processes the tests start: ``celery -A tests.django.tasks.celery_app worker``.

Django is set up first (the tasks take their locks through its settings), and every skip is
written to ``DYNALOCK_TEST_RUNS + ".skipped"``, from the ``task_skipped`` signal the package sends,
and every copy a worker process begins to ``+ ".prerun"``.
"""

import os
from pathlib import Path
from typing import Any

import time

import django
from celery.signals import task_prerun

django.setup()

from dynalock_django.signals import task_skipped  # noqa: E402  (after django.setup())

from .jobs import RUNS, app  # noqa: E402


def write_skip(sender: str, *, task: str, holder: Any, **kwargs: Any) -> None:
    with Path(os.environ[RUNS] + ".skipped").open("a") as skipped:
        skipped.write(f"{task} {os.getpid()} {getattr(holder, 'fencing_token', None)}\n")


def write_prerun(task_id: str, **kwargs: Any) -> None:
    """When a worker process begins a copy (before its lock is asked for): ``task_id pid monotonic``."""
    with Path(os.environ[RUNS] + ".prerun").open("a") as prerun:
        prerun.write(f"{task_id} {os.getpid()} {time.monotonic()}\n")


task_skipped.connect(write_skip)
task_prerun.connect(write_prerun)

__all__ = ["app"]
