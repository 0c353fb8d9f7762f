"""Django's Tasks framework (Django 6, or the django-tasks backport): ``@task`` above ``@lock_task``.

With ``takes_context=True`` a ``TaskContext`` is passed first; its ``task_result.attempts`` counts this attempt.
"""

from __future__ import annotations

from typing import Any

from .base import TaskRun, function_at, is_instance_of_loaded

TASK_KIND = "a Django Task (@task)"


def is_injected(value: Any) -> bool:
    return is_instance_of_loaded(value, ("django.tasks.base", "TaskContext"), ("django_tasks.base", "TaskContext"))


def current_run(args: tuple[Any, ...], kwargs: dict[str, Any]) -> TaskRun | None:
    if args and is_injected(args[0]) and hasattr(args[0], "task_result"):
        result = args[0].task_result  # its attempts count this one
        return TaskRun(str(result.id), max(0, int(result.attempts) - 1))
    return None


def owns(task: Any) -> bool:
    return hasattr(task, "enqueue") and hasattr(task, "func")


function_of = function_at("func")


def injects_first_argument(task: Any) -> bool:
    return bool(getattr(task, "takes_context", False))


def enqueue(task: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return task.enqueue(*args, **kwargs)
