"""The tasks of the task chaos run (tests/django/tasks/chaos.py), and what their workers record.

Each worker process appends events to its own file in the directory named by ``DYNALOCK_TEST_EVENTS``
(tests/chaos/history.py: one JSON line each, flushed, so a SIGKILL loses nothing written before it):
``start`` and ``end`` of every run (inside its lock, with its fencing token), ``skip`` from the
``task_skipped`` signal, ``lost`` from ``lease_lost``, ``failed`` (the exception's class) when a copy
raised without running to its end, and (Celery) ``begin`` whenever a worker process begins a copy,
before its lock is asked for.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from pathlib import Path
from typing import Any

from dynalock_django.dynamodb import DynamoDBUnavailable
from dynalock_django.signals import lease_lost, task_skipped
from dynalock_django.tasks import current_token, lock_task

from ...chaos.history import Recorder
from .environment import EVENTS
from .jobs import app, task

try:
    from django.tasks.signals import task_finished  # Django 6
except ImportError:  # Django 5.2: the backport
    from django_tasks.signals import task_finished  # type: ignore[no-redef]


class Flaky(Exception):
    """A transient failure: a flaky copy raises it on its first attempt, and Celery's ``autoretry_for`` retries it."""


@functools.cache
def _recorder(pid: int) -> Recorder | None:
    directory = os.environ.get(EVENTS)
    return Recorder(Path(directory), "worker") if directory else None


def record(kind: str, key: str = "", token: int | None = None, **data: Any) -> None:
    recorder = _recorder(os.getpid())  # per process: a forked pool process writes a file of its own
    if recorder is not None:
        recorder(kind, key, token, pid=os.getpid(), **data)


def work(task_id: str, attempt: int, name: str, seconds: float, flaky: bool) -> int | None:
    """A run of chaos task ``name``: recorded as it starts and ends, inside its lock."""
    token = current_token()
    record("start", name, token, id=task_id, attempt=attempt)
    time.sleep(seconds)
    if flaky and attempt == 0:
        record("end", name, token, id=task_id, attempt=attempt, outcome="retry")
        raise Flaky(f"{name}: the first attempt fails, the retry runs")
    record("end", name, token, id=task_id, attempt=attempt, outcome="ran")
    return token


def chaos_key(name: str, seconds: float, flaky: bool = False) -> str:
    """One lock per chaos name, whatever the copy's length or flakiness."""
    return f"chaos {name}"


# As the docs advise a user: a copy that could not ask DynamoDB for its lock (it did not run) is retried.
@app.task(bind=True, autoretry_for=(Flaky, DynamoDBUnavailable), default_retry_delay=0.2, max_retries=3)
@lock_task(key=chaos_key)
def celery_chaos(self: Any, name: str, seconds: float, flaky: bool = False) -> int | None:
    return work(str(self.request.id), int(self.request.retries or 0), name, seconds, flaky)


# The limited name's copies (task_history.LIMITS): at most two runs at once.
@app.task(bind=True, autoretry_for=(Flaky, DynamoDBUnavailable), default_retry_delay=0.2, max_retries=3)
@lock_task(key=chaos_key, limit=2)
def celery_chaos_pair(self: Any, name: str, seconds: float, flaky: bool = False) -> int | None:
    return work(str(self.request.id), int(self.request.retries or 0), name, seconds, flaky)


@task(takes_context=True)
@lock_task(key=chaos_key, limit=2)
def django_chaos_pair(context: Any, name: str, seconds: float, flaky: bool = False) -> int | None:
    return work(str(context.task_result.id), 0, name, seconds, flaky=False)


@task(takes_context=True)
@lock_task(key=chaos_key)
def django_chaos(context: Any, name: str, seconds: float, flaky: bool = False) -> int | None:
    # Django's Tasks retry nothing themselves: ``flaky`` is for Celery, and a Django copy has one attempt.
    return work(str(context.task_result.id), 0, name, seconds, flaky=False)


def _record_skip(sender: str, *, task_id: str | None = None, **kwargs: Any) -> None:
    record("skip", sender, None, id=task_id)


def _record_lost(sender: str, **kwargs: Any) -> None:
    record("lost", sender, None)


def record_failure(task_id: str, error: BaseException | str, *, final: bool) -> None:
    """A copy raised (``final``: and is not retried): what, so that a report can say why a copy is missing."""
    name = error if isinstance(error, str) else type(error).__name__
    record("failed", "", None, id=task_id, error=name, final=final)


def _record_django_failure(sender: Any, task_result: Any, **kwargs: Any) -> None:
    # Sent inside the worker's exception handler: the exception is the one being handled.
    error = sys.exc_info()[1]
    if error is not None and str(task_result.status) == "FAILED":
        record_failure(str(task_result.id), error, final=True)


task_skipped.connect(_record_skip)
lease_lost.connect(_record_lost)
task_finished.connect(_record_django_failure)
