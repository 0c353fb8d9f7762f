"""lock_task on a real local store: keys, on_conflict, current_token, skips made visible, argument errors."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest

from dynalock_django import AlreadyQueued, TaskLocked
from dynalock_django.client import get_client
from dynalock_django.dynamodb import MAX_PARTITION_KEY_BYTES, Described, Lease, LockClient
from dynalock_django.exceptions import ConfigurationError, InvalidLockRequest, LockLost, LockTimeout
from dynalock_django.keys import parse_key
from dynalock_django.signals import lease_acquired, lease_lost, lease_released, task_skipped
from dynalock_django.tasks import current_token, enqueue_unique, lock_task
from dynalock_django.tasks.holder_watch import acquire_unless_alive

from ...dynamodb_support import LEASE, PATIENCE, make_dynamodb, short_lease_client, unique
from . import jobs

pytestmark = pytest.mark.uses_dynalock


def key_of(function: Any, *args: Any, **kwargs: Any) -> str:
    return function.dynalock_task.keys.run_key(args, kwargs, injected=False)


# Keys


def test_positional_keyword_and_default_arguments_make_one_key():
    assert key_of(jobs.plain, 1) == key_of(jobs.plain, account_id=1) == key_of(jobs.plain, 1, "invoice")
    assert key_of(jobs.plain, 1, seconds=0, b=[1, 2]) == key_of(jobs.plain, account_id=1, b=(1, 2), seconds=0)
    assert key_of(jobs.plain, 1) == 'tests.django.tasks.jobs.plain(account_id=1,kind="invoice",extra=[],options={})'


def test_different_arguments_make_different_keys():
    keys = {
        key_of(jobs.plain, 1),
        key_of(jobs.plain, 2),
        key_of(jobs.plain, "1"),
        key_of(jobs.plain, 1, "credit"),
        key_of(jobs.plain, 1, "a,b=c"),  # the separators inside a value are encoded
        key_of(jobs.plain, 1, "a", "b=c"),
        key_of(jobs.raising),
    }
    assert len(keys) == 7


def test_a_key_reads_back_as_a_name_and_a_long_one_is_shortened_to_fit():
    key = key_of(jobs.plain, 1, "a:b")
    assert ":" not in key
    assert parse_key(key).name == key
    long_a, long_b = key_of(jobs.plain, "é" * 3000), key_of(jobs.plain, "é" * 3001)
    assert len(long_a.encode()) <= MAX_PARTITION_KEY_BYTES
    assert long_a != long_b
    assert long_a.startswith("tests.django.tasks.jobs.plain(account_id=")


def test_a_string_or_callable_key_replaces_the_arguments():
    @lock_task("nightly")
    def nightly(day: str) -> None: ...

    @lock_task(lambda account_id, **_: f"account-{account_id}")
    def by_account(account_id: int, note: str = "") -> None: ...

    assert key_of(nightly, "mon") == key_of(nightly, "tue") == "nightly"
    assert key_of(by_account, 3, note="x") == key_of(by_account, account_id=3) == "account-3"


def test_arguments_that_are_not_json_or_do_not_fit_the_signature_are_clear_errors():
    with pytest.raises(InvalidLockRequest, match=r"argument 'kind' \(object\) is not JSON.*lock_task\(key=\.\.\.\)"):
        jobs.plain(1, object())
    with pytest.raises(InvalidLockRequest, match="cannot be called with these arguments"):
        jobs.plain()

    @lock_task(lambda: "")
    def empty() -> None: ...

    with pytest.raises(InvalidLockRequest, match="must return a non-empty string"):
        empty()


def test_the_framework_object_passed_first_is_not_part_of_the_key():
    celery_task = jobs.celery_queued
    locked = celery_task.run.__func__.dynalock_task
    assert locked.keys.run_key((celery_task, 5), {}, injected=True) == locked.keys.run_key((None, 5), {}, injected=True)
    assert locked.keys.run_key((celery_task, 5), {}, injected=True).endswith("celery_queued(account_id=5)")


# Running, conflicts and tokens


def test_a_run_holds_the_key_knows_its_token_and_releases_it():
    seen = {}

    @lock_task("report")
    def report() -> int | None:
        lease = get_client().get(key_of(report))
        seen["holder"] = lease
        return current_token()

    assert current_token() is None
    token = report()
    assert token is not None
    assert token == seen["holder"].fencing_token
    assert not seen["holder"].is_released
    assert get_client().get("report").is_released
    assert current_token() is None
    assert report() > token  # strictly increasing across runs


def test_a_run_sends_the_lease_signals_of_every_django_layer_lock():
    sent = []

    def receiver(signal: Any, sender: str, lease: Any, **kwargs: Any) -> None:
        sent.append((signal, sender, lease.fencing_token))

    @lock_task("audited")
    def audited() -> int | None:
        return current_token()

    receivers = (lease_acquired, lease_released)
    for signal in receivers:
        signal.connect(receiver)
    try:
        token = audited()
    finally:
        for signal in receivers:
            signal.disconnect(receiver)
    assert sent == [(lease_acquired, "audited", token), (lease_released, "audited", token)]


def test_a_run_whose_lease_was_lost_sends_lease_lost_and_its_end_raises(dynalock):
    lost = []

    def receiver(sender: str, lease: Any, **kwargs: Any) -> None:
        lost.append(sender)

    @lock_task("overrun")
    def overrun() -> None:
        # An operator's force release takes the lock away mid-run; the next renewal finds it gone.
        get_client().force_release(get_client().get("overrun"), released_by="an operator")
        deadline = time.monotonic() + PATIENCE
        while not lost and time.monotonic() < deadline:
            time.sleep(0.05)

    lease_lost.connect(receiver)
    try:
        with pytest.raises(LockLost):
            overrun()
    finally:
        lease_lost.disconnect(receiver)
    assert lost == ["overrun"]


def test_an_error_in_the_task_propagates_and_releases_the_key():
    @lock_task("failing")
    def failing() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        failing()
    assert get_client().get("failing").is_released
    assert current_token() is None


def test_a_live_holder_makes_a_copy_skip_visibly(other_holder, caplog):
    key = key_of(jobs.plain, 7, "x\n\x1b[31m")
    held = other_holder.acquire(key)
    skipped = []

    def receiver(sender: str, **kwargs: Any) -> None:
        skipped.append((sender, kwargs["task"], kwargs["holder"].fencing_token, kwargs["task_id"]))

    task_skipped.connect(receiver)
    try:
        with caplog.at_level(logging.INFO, logger="dynalock_django.tasks"):
            assert jobs.plain(7, "x\n\x1b[31m") is None
    finally:
        task_skipped.disconnect(receiver)
        held.release()
    assert skipped == [(key, "tests.django.tasks.jobs.plain", held.fencing_token, None)]  # a plain call: no queue id
    [message] = [r.getMessage() for r in caplog.records if r.name == "dynalock_django.tasks"]
    assert message.startswith("Task tests.django.tasks.jobs.plain skipped: ")
    assert "\n" not in message
    assert "\x1b" not in message
    assert f"token {held.fencing_token}" in message


def test_a_skipped_queued_copy_is_named_by_its_task_id_in_the_signal_and_the_log(other_holder, caplog):
    held = other_holder.acquire(key_of(jobs.celery_job.run, 8))
    ids = []

    def receiver(sender: str, **kwargs: Any) -> None:
        ids.append(kwargs["task_id"])

    task_skipped.connect(receiver)
    try:
        with caplog.at_level(logging.INFO, logger="dynalock_django.tasks"):
            assert jobs.celery_job.apply(args=(8,), task_id="copy-\n7").get() is None
    finally:
        task_skipped.disconnect(receiver)
        held.release()
    assert ids == ["copy-\n7"]
    [message] = [r.getMessage() for r in caplog.records if r.name == "dynalock_django.tasks"]
    assert message.startswith("Task tests.django.tasks.jobs.celery_job (task id copy-\\n7) skipped: ")  # escaped


def test_raise_mode_raises_task_locked_naming_the_holder(other_holder):
    held = other_holder.acquire(key_of(jobs.raising))
    try:
        with pytest.raises(TaskLocked, match="held by a live run") as raised:
            jobs.raising()
    finally:
        held.release()
    assert isinstance(raised.value, LockTimeout)
    assert raised.value.holder.fencing_token == held.fencing_token
    assert jobs.raising() is not None  # free again: it runs


def test_wait_mode_runs_once_the_holder_releases_and_raises_after_its_timeout(other_holder):
    @lock_task("waited", on_conflict="wait", timeout=PATIENCE)
    def waited() -> int | None:
        return current_token()

    @lock_task("waited", on_conflict="wait", timeout=0.2)
    def impatient() -> None: ...

    # A lease no loaded machine's pause runs out (a starved 1 s one did, on CI): the wait is what is asserted.
    held = other_holder.acquire("waited", lease_duration=60.0)
    with pytest.raises(TaskLocked, match="waited 0.2s"):
        impatient()
    threading.Timer(0.3, held.release).start()
    assert waited() > held.fencing_token


def test_a_dead_holders_key_is_taken_over_after_about_its_lease(dynalock):
    dead = short_lease_client(make_dynamodb(dynalock["ENDPOINT_URL"]), dynalock["TABLE_NAME"])
    held = dead.acquire(key_of(jobs.plain, 8))
    dead.close(release=False)  # its heartbeat stops, as a killed worker's does
    started = time.monotonic()
    token = jobs.plain(8)
    assert token is not None
    assert token > held.fencing_token
    assert time.monotonic() - started >= LEASE * 0.9  # a dead holder is waited out, never cut short


def test_a_retry_meeting_its_own_earlier_attempt_waits_for_it_instead_of_skipping(other_holder):
    from dynalock_django.payload import LockData

    locked = jobs.celery_job.run.dynalock_task
    key = key_of(jobs.celery_job.run, 9)
    data = LockData(purpose="task", extra={"task": locked.name, "task_id": "t-1", "attempt": 0}).to_bytes()
    held = other_holder.acquire(key, data=data)
    threading.Timer(LEASE, held.release).start()  # after a heartbeat or more: a skip would have come first
    result = jobs.celery_job.apply(args=(9,), task_id="t-1", retries=1)
    assert result.get() is not None
    assert result.get() > held.fencing_token


# Enqueue-time uniqueness


@pytest.fixture
def dummy_tasks_backend(settings):
    backend = "django.tasks.backends.dummy.DummyBackend"
    try:
        import django.tasks  # noqa: F401
    except ImportError:
        backend = "django_tasks.backends.dummy.DummyBackend"
    settings.TASKS = {"default": {"BACKEND": backend}}


def test_a_second_enqueue_while_one_is_queued_is_refused_until_it_starts(dummy_tasks_backend):
    result = enqueue_unique(jobs.django_queued, 4)
    with pytest.raises(AlreadyQueued, match="queued already"):
        enqueue_unique(jobs.django_queued, account_id=4)
    enqueue_unique(jobs.django_queued, 5)  # another key
    jobs.django_queued.call(jobs.TaskContext(task_result=result), 4)  # a worker starts the copy: its marker is released
    enqueue_unique(jobs.django_queued, 4)


def test_a_copy_starting_hands_its_marker_over_without_a_warning(dummy_tasks_backend, caplog):
    """The marker's release is the normal hand-over from the queue to the run: no "force-released" WARNING."""
    result = enqueue_unique(jobs.django_queued, 14)
    with caplog.at_level(logging.DEBUG, logger="dynalock_django"):
        jobs.django_queued.call(jobs.TaskContext(task_result=result), 14)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert any("released its queued marker" in message for message in caplog.messages)
    enqueue_unique(jobs.django_queued, 14)  # the marker is free: another copy may be queued


def test_a_copy_lost_in_the_queue_frees_its_key_after_the_queued_lease(dummy_tasks_backend):
    enqueue_unique(jobs.django_queued, 6)
    started = time.monotonic()
    while True:
        try:
            enqueue_unique(jobs.django_queued, 6)
            break
        except AlreadyQueued:
            assert time.monotonic() - started < 1.0 + PATIENCE
            time.sleep(0.1)
    assert time.monotonic() - started >= 1.0 * 0.9  # not before the queued lease


def test_enqueue_unique_with_celery_skips_the_bound_task_in_the_key_and_frees_the_marker_as_it_runs():
    result = enqueue_unique(jobs.celery_queued, 3)  # eager: runs at once, releasing its marker as it starts
    assert result.get() is not None
    enqueue_unique(jobs.celery_queued, 3)


def test_enqueue_unique_needs_a_unique_lock_task():
    with pytest.raises(ConfigurationError, match="needs @lock_task\\(unique_while_queued=True"):
        enqueue_unique(jobs.django_job, 1)
    with pytest.raises(ConfigurationError, match="has no @lock_task"):
        enqueue_unique(lambda: None)


# Arguments checked when decorating


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"on_conflict": "queue"}, "use one of skip, raise, wait"),
        ({"on_conflict": "wait"}, "needs timeout="),
        ({"timeout": 5}, 'applies only to on_conflict="wait"'),
        ({"on_conflict": "wait", "timeout": -1}, "timeout=-1"),
        ({"lease_duration": 0}, "more than 0"),
        ({"lease_duration": float("nan")}, "finite number"),
        ({"lease_duration": True}, "finite number"),
        ({"unique_while_queued": True}, "needs queued_lease="),
        ({"queued_lease": 10}, "only with unique_while_queued=True"),
        ({"key": 5}, "non-empty string, a callable"),
        ({"key": ""}, "non-empty string, a callable"),
    ],
)
def test_bad_options_are_refused_when_decorating(options, message):
    with pytest.raises(ConfigurationError, match=message):
        lock_task(**options)(lambda: None)


def test_decorating_a_task_object_or_a_coroutine_is_refused():
    with pytest.raises(ConfigurationError, match="put @lock_task\\(\\) below @task"):
        lock_task()(jobs.django_job)

    async def later() -> None: ...

    with pytest.raises(ConfigurationError, match="coroutine functions"):
        lock_task()(later)


def test_a_skip_is_quick_against_a_holder_that_renews(dynalock):
    alive = LockClient(
        make_dynamodb(dynalock["ENDPOINT_URL"]), dynalock["TABLE_NAME"], lease_duration=30, heartbeat_period=0.2
    )
    held = alive.acquire(key_of(jobs.plain, 10))
    try:
        started = time.monotonic()
        assert jobs.plain(10) is None
        assert time.monotonic() - started < 30  # a live holder is recognised by its heartbeat, not its lease
    finally:
        held.release()
        alive.close()


class TickingClock:
    """Each read of the monotonic clock moves it on: a minute passes in a dozen reads, not in a minute.

    Its waits are real seconds (not a virtual clock's): the holder renews in real time while the copy watches.
    """

    def __init__(self, step: float) -> None:
        self.step = step
        self.now = 1000.0

    def monotonic(self) -> float:
        self.now += self.step
        return self.now

    def time(self) -> float:
        return self.now + 1_699_999_000.0

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        return event.wait(timeout)


@pytest.mark.timeout(30)  # on the system clock this copy would wait a minute: the holder's lease
def test_a_copy_gives_up_waiting_for_a_renewing_holder_when_its_clients_clock_says_the_lease_passed(dynalock):
    key = unique("renewing-holder")
    holder = short_lease_client(make_dynamodb(dynalock["ENDPOINT_URL"]), dynalock["TABLE_NAME"], lease_duration=60)
    held = holder.acquire(key)  # renewed every heartbeat period (real time) while the copy watches
    # Half a second of the copy's clock a read, some thirty reads a real second: a renewal late by
    # four real seconds would still come before the copy's clock saw the minute of a takeover.
    copy = short_lease_client(make_dynamodb(dynalock["ENDPOINT_URL"]), dynalock["TABLE_NAME"], clock=TickingClock(0.5))
    try:
        # waits_for: as if the holder were this copy's own earlier attempt, which it waits for, up to the deadline
        # The copy's own lease is the holder's minute too: its wait is bounded by the shorter of the two.
        seen = acquire_unless_alive(
            copy, key, described=Described("task"), data=b"", lease_duration=60, waits_for=lambda holder: True
        )
        assert not isinstance(seen, Lease)
        assert seen is not None
        assert seen.fencing_token == held.fencing_token
    finally:
        copy.close()
        held.release()
        holder.close()
