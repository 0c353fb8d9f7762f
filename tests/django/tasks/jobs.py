"""Tasks the tests run: plain functions, Django Tasks (Django 6, or the django-tasks backport) and Celery.

Each records its runs (and, through ``task_skipped``, its skips) as lines in the file named by
``DYNALOCK_TEST_RUNS`` (when set):
``name start_monotonic end_monotonic token pid`` — the monotonic clock is the machine's,
shared by every process, so runs of several workers can be checked for overlaps.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from celery import Celery

from dynalock_django.signals import task_skipped
from dynalock_django.tasks import current_token, lock_task

from .environment import BROKER, RUNS, VISIBILITY

try:
    from django.tasks import TaskContext, task  # Django 6
except ImportError:  # Django 5.2: the backport
    from django_tasks import TaskContext, task  # type: ignore[no-redef]

__all__ = ["TaskContext", "app", "task"]


# The broker is the test's redis-server (tests/django/tasks/test_celery_workers.py); eager in the unit tests.
app = Celery("tests.django.tasks.jobs", broker=os.environ.get(BROKER, "memory://"))
app.conf.update(
    task_acks_late=True,  # a message is acknowledged when its task ends, so a killed worker's is delivered again
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    broker_connection_retry_on_startup=True,
    task_always_eager=not os.environ.get(BROKER),
)
# A test's short visibility timeout: the broker hands a task still running out again once it passes, as
# Redis and SQS do (celery#3270, "another copy every ~300 s"); unacknowledged messages are looked for every second.
# Kombu looks under a Redis lock that expires after unacked_mutex_expire (300 s by default): a worker killed
# while looking keeps every worker from handing anything out again until then, and the chaos run's copies that
# a killed worker had taken were never begun within its 90 s to settle. Expiring it after a second lets two
# workers hand one message out twice at worst: a redelivery, which the lock turns into a skip.
if os.environ.get(VISIBILITY):
    app.conf.broker_transport_options = {
        "visibility_timeout": float(os.environ[VISIBILITY]),
        "unacked_restore_interval": 1,
        "unacked_restore_throttle": 1,
        "unacked_mutex_expire": 1,
    }


def record(name: str, seconds: float) -> int | None:
    """Work for ``seconds`` (none once the test has killed a worker), then write the run's line; its token."""
    token = current_token()
    started = time.monotonic()
    path = os.environ.get(RUNS)
    if path and Path(path + ".killed").exists():
        seconds = 0
    if path:
        with Path(path + ".started").open("a") as started_file:
            started_file.write(f"{name} {os.getpid()} {token}\n")
    time.sleep(seconds)
    if path:
        with Path(path).open("a") as runs:
            runs.write(f"{name} {started} {time.monotonic()} {token} {os.getpid()}\n")
    return token


def write_skip(sender: str, *, task: str, holder: Any, **kwargs: Any) -> None:
    """Every skip in a worker process, from the ``task_skipped`` signal: ``task pid holder_token``."""
    path = os.environ.get(RUNS)
    if path:
        with Path(path + ".skipped").open("a") as skipped:
            skipped.write(f"{task} {os.getpid()} {getattr(holder, 'fencing_token', None)}\n")


task_skipped.connect(write_skip)


@lock_task()
def plain(account_id: int, kind: str = "invoice", *extra: Any, **options: Any) -> int | None:
    return record(f"plain-{account_id}", float(options.get("seconds", 0)))


@lock_task(on_conflict="raise")
def raising(seconds: float = 0) -> int | None:
    return record("raising", seconds)


@task
@lock_task()
def django_job(account_id: int, seconds: float = 0.0) -> int | None:
    return record(f"django-{account_id}", seconds)


@task(takes_context=True)
@lock_task(unique_while_queued=True, queued_lease=1.0)
def django_queued(context: Any, account_id: int) -> int | None:
    return record(f"django-queued-{account_id}", 0)


@app.task
@lock_task()
def celery_job(account_id: int, seconds: float = 0.0) -> int | None:
    return record(f"celery-{account_id}", seconds)


@app.task(bind=True)
@lock_task(unique_while_queued=True, queued_lease=1.0)
def celery_queued(self: Any, account_id: int) -> int | None:
    return record(f"celery-queued-{account_id}", 0)
