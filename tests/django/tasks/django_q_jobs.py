"""django-q2's tasks for the task tests: plain functions with ``@lock_task``, run by ``manage.py qcluster``.

django-q2 has no task object: ``async_task("tests.django.tasks.django_q_jobs.q_chaos", ...)`` names the
function. The test learns the copy's id from django-q2's own ``pre_execute`` signal (not from the lock,
whose reading of it is what is tested) and its attempt from the ``Task`` row django-q2 keeps for it.
"""

from __future__ import annotations

from typing import Any

from django_q.models import Task
from django_q.signals import post_execute_in_worker, pre_execute

from dynalock_django.tasks import lock_task

from .chaos_jobs import chaos_key, record, record_failure, work

MAX_ATTEMPTS = 3  # django_q_settings.Q_CLUSTER["max_attempts"]
_running: dict[str, str] = {}


def attempts_before(task_id: str) -> int:
    """How many attempts of this copy django-q2 saved a result of (its ``Task`` row's ``attempt_count``)."""
    return Task.objects.filter(id=task_id).values_list("attempt_count", flat=True).first() or 0


def _begin(sender: Any, func: Any, task: dict[str, Any], **kwargs: Any) -> None:
    _running["id"] = str(task["id"])
    record("begin", "", None, id=str(task["id"]), attempt=attempts_before(str(task["id"])))


def _finished(sender: Any, func: Any, task: dict[str, Any], **kwargs: Any) -> None:
    if not task.get("success", True):
        final = attempts_before(str(task["id"])) + 1 >= MAX_ATTEMPTS
        record_failure(str(task["id"]), str(task.get("result", "")).split(" : ", 1)[0][:80] or "failed", final=final)


pre_execute.connect(_begin)
post_execute_in_worker.connect(_finished)


def _run(name: str, seconds: float, flaky: bool) -> int | None:
    task_id = _running["id"]
    return work(task_id, attempts_before(task_id), name, seconds, flaky)


@lock_task(key=chaos_key)
def q_chaos(name: str, seconds: float, flaky: bool = False) -> int | None:
    return _run(name, seconds, flaky)


@lock_task(key=chaos_key, limit=2)
def q_chaos_pair(name: str, seconds: float, flaky: bool = False) -> int | None:
    return _run(name, seconds, flaky)


def scheduled_key(account: int) -> str:
    return f"scheduled {account}"


@lock_task(key=scheduled_key)
def q_scheduled(account: int) -> int | None:
    """A django-q2 ``Schedule``'s function: what the lock saw of the copy (its id), and its token."""
    from dynalock_django.tasks import current_token, frameworks

    run = frameworks.current_run(())
    record("scheduled", scheduled_key(account), current_token(), id=run.task_id if run else None)
    return current_token()
