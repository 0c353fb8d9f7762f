"""What Celery and Django's Tasks framework add to a task, found without importing either.

Neither is a dependency: a framework's classes are looked up in ``sys.modules``,
so one that was never imported is simply not in use.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..exceptions import ConfigurationError
from . import django_q_tasks, dramatiq_actors

# The object a framework passes before a task's own arguments: Celery's task with ``bind=True``,
# Django's TaskContext with ``takes_context=True`` (Django 6, or the django-tasks backport).
_INJECTED = (("celery.app.task", "Task"), ("django.tasks.base", "TaskContext"), ("django_tasks.base", "TaskContext"))


@dataclass(frozen=True)
class TaskRun:
    """One attempt at running a queued task: its id in the queue and how many attempts came before it."""

    task_id: str
    attempt: int


def is_injected(value: Any) -> bool:
    """True for a Celery task (``bind=True``'s ``self``) or a Django Tasks context (``takes_context=True``)."""
    for module_name, class_name in _INJECTED:
        cls = getattr(sys.modules.get(module_name), class_name, None)
        if isinstance(cls, type) and isinstance(value, cls):
            return True
    return False


def current_run(arguments: tuple[Any, ...]) -> TaskRun | None:
    """The queued task this call runs, when a worker runs it; None for a plain call."""
    if arguments and is_injected(arguments[0]) and hasattr(arguments[0], "task_result"):
        result = arguments[0].task_result  # Django's TaskContext: its attempts count this one
        return TaskRun(str(result.id), max(0, int(result.attempts) - 1))
    state = sys.modules.get("celery._state")
    current = state.get_current_task() if state is not None else None
    request = getattr(current, "request", None)
    if request is not None and getattr(request, "id", None):
        return TaskRun(str(request.id), int(request.retries or 0))
    for queue in (dramatiq_actors, django_q_tasks):
        found = queue.current_run()
        if found is not None:
            return TaskRun(*found)
    return None


def is_task_object(value: Any) -> bool:
    """A framework's task object (not a function) that ``lock_task`` must sit under: a dramatiq actor."""
    return dramatiq_actors.is_actor(value)


def requeue(task: str, delay: float) -> bool:
    """Put the running copy back in its queue ``delay`` seconds from now, uncounted; False when it cannot be."""
    return dramatiq_actors.requeue(task, delay)


def decorated_function(task: Any) -> Callable[..., Any]:
    """The function under a Django ``Task`` (``.func``) or a Celery task (``.run``), or ``task`` itself."""
    function = getattr(task, "func", None) if hasattr(task, "enqueue") else None
    if function is None and dramatiq_actors.is_actor(task):
        function = task.fn
    if function is None and hasattr(task, "apply_async"):
        function = getattr(task, "run", None)
    function = function if function is not None else task
    unbound: Callable[..., Any] = getattr(function, "__func__", function)  # Celery's bind=True: a bound method
    return unbound


def injects_first_argument(task: Any) -> bool:
    """Whether the framework passes its own object before the arguments an enqueue gives."""
    if hasattr(task, "enqueue"):
        return bool(getattr(task, "takes_context", False))
    return inspect.ismethod(getattr(task, "run", None))


def enqueue(task: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Put ``task(*args, **kwargs)`` in its queue: Django's ``.enqueue``, Celery's ``.apply_async``."""
    if hasattr(task, "enqueue"):
        return task.enqueue(*args, **kwargs)
    if hasattr(task, "apply_async"):
        return task.apply_async(args, kwargs)
    if dramatiq_actors.is_actor(task):
        return task.send(*args, **kwargs)
    raise ConfigurationError(
        f"enqueue_unique() needs a Django Task (@task) or a Celery task (@app.task, @shared_task), "
        f"not {type(task).__name__}: decorate the function with @lock_task under the framework's decorator."
    )
