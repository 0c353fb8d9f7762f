"""The Celery app of the worker processes the tests start: ``celery -A tests.django.tasks.celery_app worker``.

Django is set up first (the tasks take their locks through its settings); every copy a worker
process begins is written to ``DYNALOCK_TEST_RUNS + ".prerun"``.
"""

import os
import time
from pathlib import Path
from typing import Any

import django
from celery.signals import task_prerun

django.setup()

from .jobs import RUNS, app  # noqa: E402  (after django.setup())


def write_prerun(task_id: str, **kwargs: Any) -> None:
    """When a worker process begins a copy (before its lock is asked for): ``task_id pid monotonic``."""
    with Path(os.environ[RUNS] + ".prerun").open("a") as prerun:
        prerun.write(f"{task_id} {os.getpid()} {time.monotonic()}\n")


task_prerun.connect(write_prerun)

__all__ = ["app"]
