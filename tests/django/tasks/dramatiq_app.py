"""dramatiq's broker and actors for the task tests: ``python -m dramatiq tests.django.tasks.dramatiq_app``.

The broker is the test's redis-server (``DYNALOCK_TEST_BROKER``). ``CurrentMessage`` is added as the
docs tell a user to: it is how ``@lock_task`` reads the message's id and ``retries`` option, and what
``on_conflict="retry"`` puts back in the queue. A worker that stops beating its heart for
``HEARTBEAT_MS`` has its messages (those it ran and those it had prefetched) handed to another
worker: short here, so that a SIGKILLed worker's copies come back within the test (60 s by default).
"""

from __future__ import annotations

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
django.setup()

import dramatiq  # noqa: E402  (after django.setup(): the actors' module reads the settings)
from dramatiq.brokers.redis import RedisBroker  # noqa: E402
from dramatiq.middleware import CurrentMessage, Middleware  # noqa: E402

from dynalock_django.tasks import lock_task  # noqa: E402

from .chaos_jobs import record, record_failure, work  # noqa: E402  (and its receivers, which record skips and lost leases)
from .environment import BROKER  # noqa: E402

HEARTBEAT_MS = 3000  # a dead worker's messages are handed out again after it (dramatiq's default: 60 s)
MAINTENANCE_CHANCE = 100_000  # of a million commands: the dead workers are looked for often


def make_broker(url: str) -> RedisBroker:
    """The broker the workers and the test's driver share (the driver only enqueues)."""
    return RedisBroker(url=url, heartbeat_timeout=HEARTBEAT_MS, maintenance_chance=MAINTENANCE_CHANCE)


class RecordBegins(Middleware):
    """The chaos run's ``begin`` (a worker begins a copy, before its lock is asked for) and ``failed`` events."""

    def before_process_message(self, broker: object, message: dramatiq.Message[object]) -> None:
        record("begin", "", None, id=message.message_id, attempt=int(message.options.get("retries", 0)))

    def after_process_message(
        self, broker: object, message: dramatiq.Message[object], *, result: object = None, exception: object = None
    ) -> None:
        if isinstance(exception, BaseException):
            record_failure(message.message_id, exception, final=False)


broker = make_broker(os.environ.get(BROKER, "redis://127.0.0.1:1/0"))
broker.add_middleware(CurrentMessage())
broker.add_middleware(RecordBegins())
dramatiq.set_broker(broker)


def _message() -> tuple[str, int]:
    message = CurrentMessage.get_current_message()
    assert message is not None, "CurrentMessage is in the broker's middleware"
    return str(message.message_id), int(message.options.get("retries", 0))


def chaos_key(name: str, seconds: float, flaky: bool = False) -> str:
    return f"chaos {name}"


# Any exception is retried by dramatiq's Retries middleware (counted): a flaky copy's first attempt, and a
# copy that could not ask DynamoDB for its lock (it did not run), with room for a store that is slow for a
# while (the client's circuit open): dramatiq's own default is 20 retries from 15 s on.
@dramatiq.actor(actor_name="dramatiq_chaos", max_retries=10, min_backoff=500, max_backoff=4000)
@lock_task(key=chaos_key)
def dramatiq_chaos(name: str, seconds: float, flaky: bool = False) -> int | None:
    task_id, attempt = _message()
    return work(task_id, attempt, name, seconds, flaky)


@dramatiq.actor(actor_name="dramatiq_chaos_pair", max_retries=10, min_backoff=500, max_backoff=4000)
@lock_task(key=chaos_key, limit=2)
def dramatiq_chaos_pair(name: str, seconds: float, flaky: bool = False) -> int | None:
    task_id, attempt = _message()
    return work(task_id, attempt, name, seconds, flaky)


# max_retries=0: a conflict counted as a retry would drop the message at once. on_conflict="retry" puts it
# back with a delay instead, uncounted, however long the holder runs (dramatiq#257).
@dramatiq.actor(actor_name="dramatiq_requeued", max_retries=0)
@lock_task(key=chaos_key, on_conflict="retry")
def dramatiq_requeued(name: str, seconds: float, flaky: bool = False) -> int | None:
    task_id, attempt = _message()
    return work(task_id, attempt, name, seconds, flaky)
