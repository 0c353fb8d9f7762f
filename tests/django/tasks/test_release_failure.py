"""A run-once task whose work is done and whose release gets no answer: it succeeded, and it runs once (issue 31).

Each task records its runs; the fault comes after its work (the release's answer is lost, or DynamoDB
stops answering). The caller sees the result, Django's Tasks mark the run SUCCESSFUL, and the retry
on DynamoDBUnavailable that docs/django/tasks.md advises has nothing to retry.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dynalock_django.dynamodb import DynamoDBUnavailable, LockLost
from dynalock_django.signals import lease_release_failed
from dynalock_django.tasks import lock_task
from dynalock_django.testing import LocksInMemory, locks_in_memory

from . import jobs

RUNS: list[str] = []
FAULT: dict[str, Any] = {}


def work_then_fault(name: str) -> str:
    RUNS.append(name)
    FAULT["then"]()  # the work is done: now the release meets the fault
    return f"{name} sent"


@lock_task("invoice-plain")
def send_invoice() -> str:
    return work_then_fault("plain")


@jobs.task()
@lock_task("invoice-django")
def send_invoice_django_task() -> str:
    return work_then_fault("django")


@jobs.app.task(autoretry_for=(DynamoDBUnavailable,), max_retries=2, default_retry_delay=0)
@lock_task("invoice-celery")
def send_invoice_celery() -> str:
    return work_then_fault("celery")


@pytest.fixture
def memory() -> Iterator[LocksInMemory]:
    RUNS.clear()
    with locks_in_memory(LEASE_DURATION=20.0, HEARTBEAT_PERIOD=5.0) as memory:
        yield memory


@pytest.fixture
def immediate_tasks_backend(settings: Any) -> None:
    try:
        import django.tasks  # noqa: F401

        backend = "django.tasks.backends.immediate.ImmediateBackend"
    except ImportError:
        backend = "django_tasks.backends.immediate.ImmediateBackend"
    settings.TASKS = {"default": {"BACKEND": backend}}


def test_a_plain_call_returns_its_result_runs_once_and_its_key_frees_within_a_lease(memory):
    failed = []

    def receiver(sender: str, **kwargs: Any) -> None:
        failed.append(sender)

    FAULT["then"] = memory.faults.hang  # DynamoDB answers nothing more
    lease_release_failed.connect(receiver)
    try:
        assert send_invoice() == "plain sent"
    finally:
        lease_release_failed.disconnect(receiver)
        memory.faults.heal()
    assert RUNS == ["plain"]
    assert failed == ["invoice-plain"]
    assert memory.client.held_leases() == []  # no longer renewed
    other = memory.new_client()
    assert other.try_acquire("invoice-plain") is None  # the item still claims its lease...
    memory.advance(20.0 + 1.0)
    assert other.acquire("invoice-plain", timeout=20.0) is not None  # ...and frees itself within it


def test_under_django_tasks_the_run_is_successful(memory, immediate_tasks_backend):
    FAULT["then"] = lambda: memory.faults.lose_answers(1)  # the release lands, its answer is lost
    result = send_invoice_django_task.enqueue()
    assert result.status.name == "SUCCESSFUL"
    assert result.return_value == "django sent"
    assert RUNS == ["django"]


def test_the_retry_on_dynamodb_unavailable_does_not_run_a_finished_task_again(memory):
    FAULT["then"] = lambda: memory.faults.lose_answers(1)
    result = send_invoice_celery.apply()
    assert result.successful()
    assert result.get() == "celery sent"
    assert RUNS == ["celery"]  # sent once: no retry ran it a second time


def test_a_run_that_lost_its_lease_in_an_outage_raises_lock_lost_which_the_retry_does_not_retry(memory):
    def outage_longer_than_a_lease() -> None:
        memory.faults.hang()  # DynamoDB stops answering while the invoice is sent...
        memory.advance(2 * 20.0)  # ...for two leases: the heartbeat cannot renew, the lease is lost

    FAULT["then"] = outage_longer_than_a_lease
    try:
        result = send_invoice_celery.apply()
    finally:
        memory.faults.heal()
    # The work ran without exclusivity: LockLost, not the release's DynamoDBUnavailable (which
    # autoretry_for would read as "nothing ran" and send the invoice a second time).
    assert isinstance(result.result, LockLost)
    assert isinstance(result.result.__cause__, DynamoDBUnavailable)
    assert RUNS == ["celery"]
