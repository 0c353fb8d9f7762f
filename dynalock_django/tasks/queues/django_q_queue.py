"""django-q2: a plain function under ``@lock_task``, queued by ``async_task``; the copy a worker runs, its attempts.

django-q2 has no task object: ``async_task(function, *args)`` queues a function (or its dotted path),
and a worker process of ``manage.py qcluster`` calls it with the arguments. The copy is known from
django-q2's ``pre_execute`` signal, which a worker sends just before the call (its task package: ``id``,
``name``), and forgotten at ``post_execute_in_worker``. Its attempts are those django-q2 saved a result
of (``Task.attempt_count``: a failed copy is handed out again until ``max_attempts``), read when a
copy asks for its lock: one query by primary key.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable
from typing import Any

from .base import TaskRun, injects_nothing_first

# django-q2 has no task object (``async_task`` takes the function): no kind to name, none owned.
TASK_KIND = ""
MODULE = "django_q"
_running = threading.local()  # a worker process runs one copy at a time; a thread of its own keeps it apart


def connect() -> None:
    """Listen for the copies django-q2's workers run; nothing when django-q2 is not in use.

    Called from the app's ``ready()``: by then an installed ``django_q`` app has been imported, and its
    signals (which import its models) may be.
    """
    if MODULE not in sys.modules:
        return
    signals = importlib.import_module("django_q.signals")  # imports its models: only once the apps are ready

    signals.pre_execute.connect(_began, dispatch_uid="dynalock_django.tasks.django_q")
    signals.post_execute_in_worker.connect(_ended, dispatch_uid="dynalock_django.tasks.django_q")


def is_injected(value: Any) -> bool:
    return False


def current_run(args: tuple[Any, ...], kwargs: dict[str, Any]) -> TaskRun | None:
    """The copy this worker process runs (its id, and its attempts before this one); None outside one."""
    task_id = getattr(_running, "task_id", None)
    if task_id is None:
        return None
    return TaskRun(task_id, _attempts_before(task_id))


def owns(task: Any) -> bool:
    return False


def function_of(task: Any) -> Callable[..., Any]:
    raise NotImplementedError("django-q2 has no task object")  # never asked: owns() is False


injects_first_argument = injects_nothing_first


def enqueue(task: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    raise NotImplementedError("django-q2 has no task object")  # never asked: owns() is False


def _attempts_before(task_id: str) -> int:
    models = sys.modules.get("django_q.models")
    if models is None:
        return 0
    count = models.Task.objects.filter(id=task_id).values_list("attempt_count", flat=True).first()
    return int(count or 0)


def _began(sender: Any, task: dict[str, Any], **kwargs: Any) -> None:
    _running.task_id = str(task.get("id")) if task.get("id") is not None else None


def _ended(sender: Any, task: dict[str, Any], **kwargs: Any) -> None:
    _running.task_id = None
