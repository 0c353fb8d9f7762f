"""rq: any function a ``Queue`` enqueues, or one decorated with ``@rq.decorators.job(queue)`` above ``@lock_task``.

rq passes nothing to a job; the running one is ``rq.get_current_job()``. Its
attempt is ``job.number_of_retries`` (rq 2 and later; before, minus
``job.retries_left``, which only falls). ``enqueue_unique`` takes the
``@job``-decorated function (its ``.delay``): a bare ``queue.enqueue(f)`` is not seen.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any

from .base import TaskRun, injects_nothing_first

TASK_KIND = "an rq job function (@rq.decorators.job)"


def is_injected(value: Any) -> bool:
    return False


def current_run(args: tuple[Any, ...], kwargs: dict[str, Any]) -> TaskRun | None:
    module = sys.modules.get("rq.job")
    job = module.get_current_job() if module is not None else None
    if job is None or not getattr(job, "id", None):
        return None
    retries = getattr(job, "number_of_retries", None)
    if retries is None and not hasattr(job, "number_of_retries"):
        return TaskRun(str(job.id), -int(job.retries_left or 0))
    return TaskRun(str(job.id), int(retries or 0))


def owns(task: Any) -> bool:
    # rq's @job returns the function itself with .delay (and .enqueue) added: no class to look for.
    return "rq" in sys.modules and inspect.isfunction(task) and inspect.isfunction(getattr(task, "delay", None))


def function_of(task: Any) -> Callable[..., Any]:
    function: Callable[..., Any] = task
    return function


injects_first_argument = injects_nothing_first


def enqueue(task: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return task.delay(*args, **kwargs)  # its rq Job
