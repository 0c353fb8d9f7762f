"""``enqueue_unique``: put a task in its queue unless a copy with the same key waits there already."""

from __future__ import annotations

from typing import Any

from ..exceptions import AlreadyQueued, ConfigurationError
from . import frameworks
from .locked_task import LockedTask, locked_task_of
from .queue_markers import take_queued_marker


def enqueue_unique(task: Any, /, *args: Any, **kwargs: Any) -> Any:
    """Enqueue ``task(*args, **kwargs)`` unless a copy with the same key is queued (AlreadyQueued).

    ``task`` is a Django Task (``.enqueue``) or a Celery task (``.apply_async(args, kwargs)``) whose
    function has ``@lock_task(unique_while_queued=True, queued_lease=...)``. Returns what the framework's
    enqueue returns. One conditional write (the marker) before the enqueue; if the enqueue fails, the
    marker is released.
    """
    locked = _unique_locked_task(task, locked_task_of(task))
    # The framework passes its own object first at run time (bind=True, takes_context=True): a stand-in here.
    injected = frameworks.injects_first_argument(task)
    queued_key = locked.keys.queued_key((None, *args) if injected else args, kwargs, injected=injected)
    marker = take_queued_marker(queued_key, task=locked.name, queued_lease=locked.queued_lease)
    if marker is None:
        raise AlreadyQueued(f"Task {locked.name} not enqueued: a copy is queued already ({queued_key!r}).")
    try:
        return frameworks.enqueue(task, args, kwargs)
    except BaseException:
        marker.release(best_effort=True)
        raise


def _unique_locked_task(task: Any, locked: LockedTask | None) -> LockedTask:
    if locked is None:
        raise ConfigurationError(
            f"enqueue_unique() got {task!r}, whose function has no @lock_task: decorate it with "
            "@lock_task(unique_while_queued=True, queued_lease=...) under the framework's decorator."
        )
    if not locked.unique_while_queued:
        raise ConfigurationError(
            f"enqueue_unique() needs @lock_task(unique_while_queued=True, queued_lease=...) on {locked.name}."
        )
    return locked
