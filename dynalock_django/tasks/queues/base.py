"""What every queue's adapter gives the dispatcher (``dynalock_django.tasks.frameworks``), and the run it reports.

An adapter is a module with the functions of :class:`QueueAdapter`. It never
imports its framework: a class it needs is looked up in ``sys.modules``
(:func:`loaded_class`), so a framework that was never imported is simply not in use.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class TaskRun:
    """One attempt at running a queued task: its id in the queue and how many attempts came before it."""

    task_id: str
    attempt: int


class QueueAdapter(Protocol):
    """One task queue, as ``lock_task`` and ``enqueue_unique`` see it (each adapter module is one)."""

    # How the queue's task objects are made, for error messages: "a Celery task (@app.task, @shared_task)".
    TASK_KIND: str

    def is_injected(self, value: Any) -> bool:
        """``value`` is the object the framework passes to a task itself (never part of the task's key)."""

    def current_run(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TaskRun | None:
        """The queued task of this framework running this call; None when it is not one."""

    def owns(self, task: Any) -> bool:
        """``task`` is one of this framework's task objects (what its decorator returns)."""

    def function_of(self, task: Any) -> Callable[..., Any]:
        """The function under a task object this adapter owns."""

    def injects_first_argument(self, task: Any) -> bool:
        """A task object this adapter owns gets the framework's object before the arguments an enqueue gives."""

    def enqueue(self, task: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Put ``task(*args, **kwargs)`` in its queue; returns what the framework's enqueue returns."""


def loaded_class(module_name: str, class_name: str) -> type | None:
    """The class ``module_name.class_name`` if that module was imported already; never imports it."""
    cls = getattr(sys.modules.get(module_name), class_name, None)
    return cls if isinstance(cls, type) else None


def is_instance_of_loaded(value: Any, *where: tuple[str, str]) -> bool:
    """``value`` is an instance of one of the classes ``(module, class)`` already imported."""
    return any(isinstance(value, cls) for cls in (loaded_class(*place) for place in where) if cls is not None)


def function_at(attribute: str) -> Callable[[Any], Callable[..., Any]]:
    """``function_of`` for a framework whose task object keeps the function as its attribute ``attribute``."""

    def function_of(task: Any) -> Callable[..., Any]:
        function: Callable[..., Any] = getattr(task, attribute)
        return function

    return function_of


def injects_nothing_first(task: Any) -> bool:
    """``injects_first_argument`` for a framework that passes a task only the arguments its enqueue gave."""
    return False
