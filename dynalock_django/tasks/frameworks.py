"""What a task queue adds to a task, asked of each queue's adapter in turn (``queues.ADAPTERS``).

No framework is a dependency, and none is imported here or by an adapter: a
framework that was never imported is simply not in use. Adding a queue is one
adapter module in ``queues/`` and one line in ``queues.ADAPTERS``; nothing here changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..exceptions import ConfigurationError
from .queues import ADAPTERS
from .queues.base import QueueAdapter
from .queues.base import TaskRun as TaskRun  # what a task run is, for lock_task


def is_injected(value: Any) -> bool:
    """True for an object a framework passes to the task itself: Celery's ``bind=True`` task, Django's context..."""
    return any(adapter.is_injected(value) for adapter in ADAPTERS)


def key_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments a task's key is made of: all but what a framework passed by keyword (huey's ``task=``)."""
    return {name: value for name, value in kwargs.items() if not is_injected(value)}


def current_run(args: tuple[Any, ...], kwargs: dict[str, Any] | None = None) -> TaskRun | None:
    """The queued task this call runs, when a worker runs it; None for a plain call."""
    for adapter in ADAPTERS:
        run = adapter.current_run(args, kwargs or {})
        if run is not None:
            return run
    return None


def _owner(task: Any) -> QueueAdapter | None:
    return next((adapter for adapter in ADAPTERS if adapter.owns(task)), None)


def is_task_object(value: Any) -> bool:
    """``value`` is a framework's task object (what its decorator returns), not a plain function."""
    return _owner(value) is not None


def decorated_function(task: Any) -> Callable[..., Any]:
    """The function under a framework's task object (Django's ``.func``, Celery's ``.run``...), or ``task`` itself."""
    owner = _owner(task)
    return owner.function_of(task) if owner is not None else task


def injects_first_argument(task: Any) -> bool:
    """Whether the framework passes its own object before the arguments an enqueue gives."""
    owner = _owner(task)
    return owner is not None and owner.injects_first_argument(task)


def enqueue(task: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Put ``task(*args, **kwargs)`` in its queue, the way its framework enqueues."""
    owner = _owner(task)
    if owner is None:
        kinds = ", ".join(adapter.TASK_KIND for adapter in ADAPTERS if adapter.TASK_KIND)
        raise ConfigurationError(
            f"enqueue_unique() needs a queue's task object ({kinds}), not {type(task).__name__}: decorate the "
            "function with @lock_task under the framework's decorator."
        )
    return owner.enqueue(task, args, kwargs)


def requeue(task: str, delay: float) -> bool:
    """Put the running copy back in its queue ``delay`` seconds from now, not counted as a retry
    (``on_conflict="retry"``), by the adapter that can (a ``requeue`` function: dramatiq's); False when none can."""
    return any(getattr(adapter, "requeue", _cannot)(task, delay) for adapter in ADAPTERS)


def listen() -> None:
    """Connect what the adapters listen to (a ``connect`` function: django-q2's signals), from the app's ``ready()``."""
    for adapter in ADAPTERS:
        connect = getattr(adapter, "connect", None)
        if connect is not None:
            connect()


def _cannot(task: str, delay: float) -> bool:
    return False
