"""The huey and rq tasks of the task chaos run (chaos.py, chaos_huey_rq.py), recorded as chaos_jobs' are.

Imported by huey's consumer (``huey_consumer tests.django.tasks.queue_chaos_jobs.huey``) and rq's
worker (it imports a job's function by name): Django is set up first. huey's broker is the Redis
of ``DYNALOCK_TEST_BROKER``; its consumer records a ``begin`` as it executes a task, before the lock.
"""

from __future__ import annotations

import os
from typing import Any

import django

django.setup()

from huey import RedisHuey, signals  # noqa: E402  (after django.setup())
from huey.api import Task  # noqa: E402

from dynalock_django.tasks import lock_task  # noqa: E402

from .chaos_jobs import chaos_key, record, record_failure, work  # noqa: E402
from .environment import BROKER  # noqa: E402

HUEY_NAME = "dynalock-chaos"
huey = RedisHuey(HUEY_NAME, url=os.environ.get(BROKER, "redis://127.0.0.1:6379/0"), results=False, utc=True)


def _attempt(task: Task) -> int:
    return int(type(task).default_retries) - int(task.retries or 0)


# As the docs advise a user (and as the chaos run's Celery and dramatiq tasks do): a copy that could not ask
# DynamoDB for its lock (it did not run: the local store stalled on the loaded machine) is retried.
RETRIES, RETRY_DELAY = 3, 1


@huey.task(context=True, retries=RETRIES, retry_delay=RETRY_DELAY)
@lock_task(key=chaos_key)
def huey_chaos(name: str, seconds: float, flaky: bool = False, task: Task | None = None) -> int | None:
    assert task is not None
    return work(str(task.id), _attempt(task), name, seconds, flaky=False)


@huey.task(context=True, retries=RETRIES, retry_delay=RETRY_DELAY)
@lock_task(key=chaos_key, limit=2)
def huey_chaos_pair(name: str, seconds: float, flaky: bool = False, task: Task | None = None) -> int | None:
    assert task is not None
    return work(str(task.id), _attempt(task), name, seconds, flaky=False)


@huey.signal(signals.SIGNAL_EXECUTING)
def _begin(signal: str, task: Task, *args: Any) -> None:
    record("begin", id=str(task.id), attempt=_attempt(task))


@huey.signal(signals.SIGNAL_ERROR)
def _failed(signal: str, task: Task, error: BaseException | None = None, *args: Any) -> None:
    record_failure(str(task.id), error or "error", final=not task.retries)


def _rq_job() -> Any:
    from rq import get_current_job

    job = get_current_job()
    assert job is not None
    return job


@lock_task(key=chaos_key)
def rq_chaos(name: str, seconds: float, flaky: bool = False) -> int | None:
    job = _rq_job()
    return work(str(job.id), int(job.number_of_retries or 0), name, seconds, flaky=False)


@lock_task(key=chaos_key, limit=2)
def rq_chaos_pair(name: str, seconds: float, flaky: bool = False) -> int | None:
    job = _rq_job()
    return work(str(job.id), int(job.number_of_retries or 0), name, seconds, flaky=False)


def _rq_worker_class() -> type:
    from rq import SimpleWorker

    class RecordingWorker(SimpleWorker):  # type: ignore[misc]
        """rq's in-process worker (a kill is the whole worker's), recording a ``begin`` before the job's lock."""

        def execute_job(self, job: Any, queue: Any) -> Any:
            record("begin", id=str(job.id), attempt=int(job.number_of_retries or 0))
            return super().execute_job(job, queue)

    return RecordingWorker


RecordingWorker = _rq_worker_class()  # rq worker -w tests.django.tasks.queue_chaos_jobs.RecordingWorker
