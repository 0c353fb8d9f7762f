"""Celery: ``@app.task`` / ``@shared_task`` above ``@lock_task``; ``bind=True``'s task is passed first."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any

from .base import TaskRun, is_instance_of_loaded

TASK_KIND = "a Celery task (@app.task, @shared_task)"


def is_injected(value: Any) -> bool:
    return is_instance_of_loaded(value, ("celery.app.task", "Task"))


def current_run(args: tuple[Any, ...], kwargs: dict[str, Any]) -> TaskRun | None:
    state = sys.modules.get("celery._state")
    current = state.get_current_task() if state is not None else None
    request = getattr(current, "request", None)
    if request is not None and getattr(request, "id", None):
        return TaskRun(str(request.id), int(request.retries or 0))
    return None


def owns(task: Any) -> bool:
    return hasattr(task, "apply_async")


def function_of(task: Any) -> Callable[..., Any]:
    function = getattr(task, "run", None)
    function = function if function is not None else task
    unbound: Callable[..., Any] = getattr(function, "__func__", function)  # bind=True: a bound method
    return unbound


def injects_first_argument(task: Any) -> bool:
    return inspect.ismethod(getattr(task, "run", None))


def enqueue(task: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return task.apply_async(args, kwargs)
