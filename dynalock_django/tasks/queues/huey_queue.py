"""huey: ``@huey.task()`` / ``@huey.periodic_task(...)`` above ``@lock_task``.

huey passes nothing to a task unless ``context=True`` (then its ``Task`` as the
``task=`` keyword, left out of the key). Without it, the running ``Task`` is the
``self`` of huey's ``Task.execute``, a few frames up. A retry is the same task
(same id) enqueued again with ``task.retries`` one lower, so the attempt is the
task class's ``retries`` minus what is left (below 0 when an enqueue gave more).
"""

from __future__ import annotations

import sys
from typing import Any

from .base import TaskRun, function_at, injects_nothing_first, is_instance_of_loaded

TASK_KIND = "a huey task (@huey.task, @huey.periodic_task)"

_TASK = ("huey.api", "Task")
_FRAMES = 12  # run_locked -> LockedTask.run -> the dispatcher -> here: huey's Task.execute is within these


def is_injected(value: Any) -> bool:
    return is_instance_of_loaded(value, _TASK)


def current_run(args: tuple[Any, ...], kwargs: dict[str, Any]) -> TaskRun | None:
    task = kwargs.get("task")
    if not is_injected(task):
        task = _executing_task()
    if task is None:
        return None
    return TaskRun(str(task.id), int(type(task).default_retries) - int(task.retries or 0))


def _executing_task() -> Any:
    if "huey.api" not in sys.modules:
        return None
    frame = sys._getframe(1)
    for _ in range(_FRAMES):
        if frame is None:
            return None
        if frame.f_code.co_name == "execute":
            candidate = frame.f_locals.get("self")
            if is_injected(candidate):
                return candidate
        frame = frame.f_back  # type: ignore[assignment]
    return None


def owns(task: Any) -> bool:
    return is_instance_of_loaded(task, ("huey.api", "TaskWrapper"))


function_of = function_at("func")
injects_first_argument = injects_nothing_first  # context=True passes huey's Task by keyword, never first


def enqueue(task: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return task(*args, **kwargs)  # a huey task called is enqueued; its Result (or None without a result store)
