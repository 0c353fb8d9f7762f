"""dramatiq: ``@dramatiq.actor`` above ``@lock_task``; its messages, its retries, and putting a message back.

An actor (``@dramatiq.actor``) wraps the function as ``.fn`` and is enqueued with ``.send``. The
message a worker runs is read through dramatiq's ``CurrentMessage`` middleware, which the broker must
have (``broker.add_middleware(CurrentMessage())``): its ``message_id`` is the copy's id, and its
``retries`` option (counted by dramatiq's ``Retries`` middleware) the attempts that came before.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from ...dynamodb import printable
from ...exceptions import ConfigurationError
from .base import TaskRun, function_at, injects_nothing_first, is_instance_of_loaded, loaded_class

logger = logging.getLogger("dynalock_django.tasks")

TASK_KIND = "a dramatiq actor (@dramatiq.actor)"
MODULE = "dramatiq"
_CURRENT_MESSAGE = "dramatiq.middleware.current_message"
# dramatiq refuses a delay of 7 days or more; a holder's lease is far shorter, but an item may claim any.
_MAX_DELAY_MS = 7 * 24 * 3600 * 1000 - 1


def is_injected(value: Any) -> bool:
    return False  # an actor gets the message's arguments only


def current_run(args: tuple[Any, ...], kwargs: dict[str, Any]) -> TaskRun | None:
    """The running message's id and its ``retries`` option (attempts before this one); None outside a worker."""
    message = _current_message()
    if message is None:
        return None
    return TaskRun(str(message.message_id), int(message.options.get("retries") or 0))


def owns(task: Any) -> bool:
    return is_instance_of_loaded(task, ("dramatiq.actor", "Actor"))


function_of = function_at("fn")
injects_first_argument = injects_nothing_first


def enqueue(task: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return task.send(*args, **kwargs)


def _current_message() -> Any:
    """The message a dramatiq worker thread runs (CurrentMessage middleware); None outside one, or without it."""
    middleware = loaded_class(_CURRENT_MESSAGE, "CurrentMessage")
    return getattr(middleware, "get_current_message", lambda: None)()


def requeue(task: str, delay: float) -> bool:
    """Put the running message back in its queue ``delay`` seconds from now, not counted as a retry.

    dramatiq's ``Retries`` middleware would count it, and drop the message once ``max_retries`` were
    spent however long the holder runs (dramatiq#257); this keeps ``retries`` as it is. False when no
    dramatiq message is running (a plain call); ConfigurationError when dramatiq runs without the
    ``CurrentMessage`` middleware, so the message cannot be read.
    """
    message = _current_message()
    if message is None:
        _check_current_message_installed(task)
        return False
    delay_ms = min(_MAX_DELAY_MS, max(1, round(delay * 1000)))
    broker = sys.modules[MODULE].get_broker()
    broker.enqueue(message, delay=delay_ms)  # the Redis broker gives each enqueue a fresh id of its own
    logger.info(
        "Task %s (message %s) put back in queue %s for %.1f s: its key is held",
        printable(task),
        printable(str(message.message_id)),
        printable(str(message.queue_name)),
        delay_ms / 1000,
    )
    return True


def _check_current_message_installed(task: str) -> None:
    middleware = loaded_class(_CURRENT_MESSAGE, "CurrentMessage")
    broker = getattr(sys.modules.get("dramatiq.broker"), "global_broker", None)
    if broker is None:
        return  # dramatiq not in use (or no broker yet): a plain call
    if middleware is None or not any(isinstance(m, middleware) for m in broker.middleware):
        raise ConfigurationError(
            f'lock_task(on_conflict="retry") on {task} cannot read the message dramatiq runs: add the '
            "CurrentMessage middleware to the broker (from dramatiq.middleware import CurrentMessage; "
            "broker.add_middleware(CurrentMessage()))."
        )
