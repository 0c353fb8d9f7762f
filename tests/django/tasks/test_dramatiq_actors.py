"""lock_task under dramatiq's own worker, in this process: its StubBroker, CurrentMessage, on_conflict="retry".

The real workers on Redis are test_dramatiq_requeue.py's and the chaos run's; here dramatiq's ``Worker``
runs actors on its in-memory broker against the suite's in-process store.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import dramatiq
import pytest
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import CurrentMessage

from dynalock_django import TaskLocked
from dynalock_django.exceptions import ConfigurationError
from dynalock_django.signals import task_skipped
from dynalock_django.tasks import enqueue_unique, lock_task

from ...dynamodb_support import HEARTBEAT, PATIENCE

pytestmark = pytest.mark.uses_dynalock

HELD_FOR = 8 * HEARTBEAT  # seconds: a holder's lease that outlives a few missed renewals


@pytest.fixture
def broker() -> Iterator[StubBroker]:
    stub = StubBroker()
    stub.add_middleware(CurrentMessage())
    stub.emit_after("process_boot")
    previous = dramatiq.broker.global_broker
    dramatiq.set_broker(stub)
    yield stub
    stub.flush_all()
    stub.close()
    dramatiq.broker.global_broker = previous


@pytest.fixture
def worker(broker: StubBroker) -> Iterator[dramatiq.Worker]:
    running = dramatiq.Worker(broker, worker_timeout=50, worker_threads=1)
    running.start()
    yield running
    running.stop()


def key_of(actor: Any, *args: Any) -> str:
    return str(actor.fn.dynalock_task.keys.run_key(args, {}, injected=False))


def until(condition: Any, patience: float = PATIENCE) -> None:
    deadline = time.monotonic() + patience
    while not condition():
        assert time.monotonic() < deadline, "not within the test's patience"
        time.sleep(0.02)


def test_a_conflict_puts_the_message_back_uncounted_and_it_runs_once_the_holder_lets_go(
    broker: StubBroker, worker: dramatiq.Worker, other_holder: Any
) -> None:
    begun: list[tuple[str, int]] = []
    runs: list[tuple[str, int]] = []

    class Begins(dramatiq.Middleware):
        def before_process_message(self, broker: Any, message: Any) -> None:
            begun.append((message.message_id, message.options.get("retries", 0)))

    broker.add_middleware(Begins())

    @dramatiq.actor(broker=broker, max_retries=0)  # a counted retry would drop it at the first conflict
    @lock_task(on_conflict="retry")
    def rebuild(account_id: int) -> None:
        message = CurrentMessage.get_current_message()
        runs.append((message.message_id, message.options.get("retries", 0)))

    # The holder keeps its lock throughout: a lease of 8 heartbeats, not the suite's 4, which a busy machine's
    # starved heartbeat let run out once (the message then took over at its first try). A message goes back
    # for the holder's remaining lease: the waits below allow one more.
    held = other_holder.acquire(key_of(rebuild, 7), lease_duration=HELD_FOR)
    sent = rebuild.send(7)
    until(lambda: len(begun) >= 2, PATIENCE + HELD_FOR)  # it met the holder, went back, came back and met it again
    assert runs == []
    held.release()
    until(lambda: runs, PATIENCE + HELD_FOR)
    assert runs == [(sent.message_id, 0)]  # it ran, and no retry was counted
    assert {message_id for message_id, _ in begun} == {sent.message_id}
    assert {retries for _, retries in begun} == {0}


def test_retry_is_refused_when_the_broker_cannot_say_which_message_runs(other_holder: Any) -> None:
    bare = StubBroker()  # no CurrentMessage
    previous = dramatiq.broker.global_broker
    dramatiq.set_broker(bare)
    try:

        @lock_task(key="bare", on_conflict="retry")
        def rebuild() -> None: ...

        held = other_holder.acquire(rebuild.dynalock_task.keys.run_key((), {}, injected=False))
        try:
            with pytest.raises(ConfigurationError, match="add the CurrentMessage middleware"):
                rebuild()
        finally:
            held.release()
    finally:
        bare.close()
        dramatiq.broker.global_broker = previous


def test_a_plain_call_cannot_be_put_back_and_raises(broker: StubBroker, other_holder: Any) -> None:
    @lock_task(key="plain-retry", on_conflict="retry")
    def rebuild() -> None: ...

    held = other_holder.acquire(rebuild.dynalock_task.keys.run_key((), {}, injected=False))
    try:
        with pytest.raises(TaskLocked, match="a plain call cannot be put back"):
            rebuild()
    finally:
        held.release()


def test_an_actor_is_refused_as_the_decorated_function(broker: StubBroker) -> None:
    actor = dramatiq.actor(broker=broker)(lambda: None)
    with pytest.raises(ConfigurationError, match="put @lock_task\\(\\) below"):
        lock_task()(actor)


def test_a_skip_names_the_message_and_enqueue_unique_sends_the_actor(
    broker: StubBroker, worker: dramatiq.Worker, other_holder: Any
) -> None:
    @dramatiq.actor(broker=broker)
    @lock_task(unique_while_queued=True, queued_lease=30)
    def export(account_id: int) -> None: ...

    skipped: list[str | None] = []

    def receiver(sender: str, **kwargs: Any) -> None:
        skipped.append(kwargs["task_id"])

    held = other_holder.acquire(key_of(export, 3))
    task_skipped.connect(receiver)
    try:
        sent = enqueue_unique(export, 3)
        until(lambda: skipped)
    finally:
        task_skipped.disconnect(receiver)
        held.release()
    assert isinstance(sent, dramatiq.Message)
    assert skipped == [sent.message_id]
