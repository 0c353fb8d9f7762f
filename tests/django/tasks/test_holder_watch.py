"""A task copy's wait for the run in its way, on the virtual clock (issue 31 items 10 and 18).

Every wait is bounded by the copy's own lease (not by whatever lease the item in the way claims),
and a duplicate that arrives while a run holds the key is skipped, however short that run.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from dynalock_django import TaskLocked
from dynalock_django.dynamodb import DynamoDBUnavailable
from dynalock_django.dynamodb.clock import start_thread
from dynalock_django.signals import task_skipped
from dynalock_django.tasks import lock_task
from dynalock_django.testing import LocksInMemory, locks_in_memory

LEASE, HEARTBEAT, REFRESH = 20.0, 5.0, 1.0
RUNS: list[str] = []


@lock_task("invoice")
def send_invoice() -> str:
    RUNS.append("invoice")
    return "sent"


@lock_task("invoice", on_conflict="raise")
def send_invoice_or_raise() -> str:
    RUNS.append("invoice")
    return "sent"


@pytest.fixture
def memory() -> Iterator[LocksInMemory]:
    RUNS.clear()
    with locks_in_memory(LEASE_DURATION=LEASE, HEARTBEAT_PERIOD=HEARTBEAT, REFRESH_PERIOD=REFRESH) as memory:
        yield memory


def put_item(memory: LocksInMemory, **attributes: str) -> None:
    memory.store.client().put_item(
        TableName=memory.table_name,
        Item={"key": {"S": "invoice"}, **{name: {"S": value} for name, value in attributes.items()}},
    )


@pytest.mark.timeout(60)  # before the fix: a wait of 31,700 years (of the virtual clock, a second at a time)
@pytest.mark.parametrize(
    "claim",
    [
        {"leaseDuration": str(10**15)},  # 31,700 years, in milliseconds
        {"leaseDuration": "a while"},  # malformed: presumed held for MALFORMED_ITEM_LEASE_SECONDS (300 s)
    ],
    ids=["31700-years", "malformed"],
)
def test_a_copy_waits_no_longer_than_its_own_lease_whatever_the_item_in_its_way_claims(memory, claim):
    put_item(memory, ownerName="by hand", recordVersionNumber="v1", **claim)
    skipped = []

    def receiver(sender: str, **kwargs: Any) -> None:
        skipped.append(sender)

    started = memory.clock.monotonic()
    task_skipped.connect(receiver)
    try:
        assert send_invoice() is None
    finally:
        task_skipped.disconnect(receiver)
    waited = memory.clock.monotonic() - started
    assert waited <= LEASE + HEARTBEAT + 1.0 + REFRESH  # its own lease, a heartbeat and the slack, at most
    assert skipped == ["invoice"]  # given up visibly
    assert RUNS == []


@pytest.mark.parametrize("task", [send_invoice, send_invoice_or_raise])
def test_a_duplicate_arriving_while_a_short_run_holds_the_key_is_skipped(memory, task):
    """The run ends (releases) before its first heartbeat: the duplicate saw it alive all the same."""
    worker = memory.new_client()
    run = worker.acquire("invoice")

    def short_run() -> None:
        memory.clock.wait(threading.Event(), 0.5)  # half a second of work, well inside a heartbeat period
        run.release()

    start_thread(memory.clock, short_run, "short run")
    if task is send_invoice:
        assert task() is None
    else:
        with pytest.raises(TaskLocked, match="held by a live run"):
            task()
    assert RUNS == []  # the duplicate did not run again behind the short run
    assert memory.clock.monotonic() - 1000.0 < HEARTBEAT  # and gave up before any heartbeat


def test_a_key_an_operator_freed_under_the_copy_is_taken_and_the_copy_runs(memory):
    """A holder gone dead, then freed by hand: the copy runs (only the holder's own release means it ran)."""
    put_item(memory, ownerName="a dead worker", recordVersionNumber="v1", leaseDuration=str(int(LEASE * 1000)))

    def operator() -> None:
        memory.clock.wait(threading.Event(), 2.0)
        memory.client.force_release(memory.client.get("invoice"), released_by="ops")

    start_thread(memory.clock, operator, "operator")
    assert send_invoice() == "sent"
    assert RUNS == ["invoice"]


@lock_task("invoice", on_conflict="wait", timeout=30.0)
def send_invoice_or_wait() -> str:
    RUNS.append("invoice")
    return "sent"


def test_a_waiting_copy_waits_no_longer_than_its_timeout_whatever_the_item_claims(memory):
    put_item(memory, ownerName="by hand", recordVersionNumber="v1", leaseDuration=str(10**15))
    started = memory.clock.monotonic()
    with pytest.raises(TaskLocked, match="waited 30.0s"):
        send_invoice_or_wait()
    assert memory.clock.monotonic() - started <= 30.0 + REFRESH
    assert RUNS == []


def test_a_duplicate_whose_run_ends_between_its_try_and_its_read_is_skipped(memory):
    """The refused try saw the run; by the copy's read the run had released: it was alive, so skip."""
    worker = memory.new_client()
    run = worker.acquire("invoice")

    def end_the_run_after_the_refused_try(**_: Any) -> None:
        if run.state == "held":
            run.release()

    events = memory.client.dynamodb.meta.events
    events.register("after-call.dynamodb.UpdateItem", end_the_run_after_the_refused_try)
    try:
        assert send_invoice() is None
    finally:
        events.unregister("after-call.dynamodb.UpdateItem", end_the_run_after_the_refused_try)
    assert run.state == "released"
    assert RUNS == []


def test_with_delete_on_release_a_run_gone_between_the_try_and_the_read_leaves_no_one_to_skip_for():
    """No item says whose run it was (it may be a retry's own earlier attempt): the copy runs, once."""
    RUNS.clear()
    with locks_in_memory(
        LEASE_DURATION=LEASE, HEARTBEAT_PERIOD=HEARTBEAT, REFRESH_PERIOD=REFRESH, DELETE_ON_RELEASE=True
    ) as memory:
        run = memory.new_client().acquire("invoice")

        def end_the_run_after_the_refused_try(**_: Any) -> None:
            if run.state == "held":
                run.release()

        events = memory.client.dynamodb.meta.events
        events.register("after-call.dynamodb.UpdateItem", end_the_run_after_the_refused_try)
        try:
            assert send_invoice() == "sent"
        finally:
            events.unregister("after-call.dynamodb.UpdateItem", end_the_run_after_the_refused_try)
    assert RUNS == ["invoice"]


def test_a_copy_whose_own_writes_are_answered_after_their_lease_is_not_skipped(memory):
    """Nobody held the key: DynamoDB was too slow to grant a lease. The copy says so; it does not skip as if a run
    held it (a skip with no run anywhere is lost work), and a retry runs it."""
    caller = threading.current_thread()
    late = [1.5 * LEASE, 1.5 * LEASE]  # the try and its retry at once, both answered after the lease they grant

    def answer_late(**_: Any) -> None:
        if threading.current_thread() is caller and late:
            memory.clock.jump(late.pop(0))

    skipped: list[object] = []

    def receiver(sender: str, **kwargs: Any) -> None:
        skipped.append(kwargs["holder"])

    events = memory.client.dynamodb.meta.events
    events.register("after-call.dynamodb.UpdateItem", answer_late)
    task_skipped.connect(receiver)
    try:
        with pytest.raises(DynamoDBUnavailable, match="only after the lease they would grant had run out"):
            send_invoice()
    finally:
        task_skipped.disconnect(receiver)
        events.unregister("after-call.dynamodb.UpdateItem", answer_late)
    assert skipped == []
    memory.advance(0)  # the copy's late write is let go in the background
    assert send_invoice() == "sent"  # the retry
    assert RUNS == ["invoice"]
