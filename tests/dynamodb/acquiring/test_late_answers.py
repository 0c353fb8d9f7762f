"""A write answered only after the lease it would grant had run out grants nothing: acquire goes on trying.

DynamoDB answers late here on the virtual clock: a botocore hook moves the
client's clock on while a request is answered (the write has landed, its
answer has not arrived). A lease counts from when its write was sent, so an
answer later than the lease would hand back a lease with no time left.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import warnings
from typing import Any

import pytest
from botocore.exceptions import ReadTimeoutError

from dynalock_django.dynamodb import DynamoDBUnavailable, LockTimeout, RetryBudgetWarning, VirtualClock

from ...dynamodb_support import LEASE, make_dynamodb, unique

# The lease is counted from when the write was sent: these answers come after it, or within it.
LATE = 1.5 * LEASE
IN_TIME = 0.4 * LEASE


class SlowAnswers:
    """DynamoDB answers the next requests of an operation late: the clock moves on while each is answered.

    Only the caller's requests (the test's thread, the client's call threads for coroutines), never
    the heartbeat's, renewal workers' or a clean-up's: their timing is not what a test scripts.
    """

    def __init__(self, dynamodb: Any, clock: VirtualClock) -> None:
        self._clock = clock
        self._delays: dict[str, list[float]] = collections.defaultdict(list)
        self._caller = threading.current_thread()
        self.answered: list[tuple[str, float]] = []  # (operation, seconds the clock moved)
        dynamodb.meta.events.register("after-call.dynamodb", self._after_call)

    def late(self, operation: str, *seconds: float) -> None:
        """The next requests of ``operation`` are answered ``seconds`` (one per request) after they were sent."""
        self._delays[operation].extend(seconds)

    def _after_call(self, model: Any, **_: Any) -> None:
        if not callers_thread(self._caller):
            return
        delays = self._delays[model.name]
        if delays:
            seconds = delays.pop(0)
            self.answered.append((model.name, seconds))
            self._clock.jump(seconds)


def keys(count: int) -> list[str]:
    """``count`` new keys, in the order a group takes them (its chunks are the first 100, then the rest)."""
    base = unique("late")
    return [f"{base}-{i:04d}" for i in range(count)]


def callers_thread(caller: threading.Thread) -> bool:
    """The request is the caller's (its thread, or the client's call threads for a coroutine)."""
    thread = threading.current_thread()
    return thread is caller or thread.name.startswith("dynalock-call-")


@pytest.fixture
def slow(make_client, dynamodb, virtual_clock):
    """A client on the virtual clock, and the way to make its store answer late."""
    return make_client(dynamodb, clock=virtual_clock), SlowAnswers(dynamodb, virtual_clock)


def test_a_write_answered_after_its_lease_ran_out_is_not_granted_and_acquire_tries_again(slow, key, virtual_clock):
    client, answers = slow
    answers.late("UpdateItem", LATE, IN_TIME)
    sent = virtual_clock.monotonic()

    # Detached, so no heartbeat renews it (on its own thread, in real time) before the test looks.
    lease = client.acquire(key, timeout=10.0, keep_alive=False)

    assert lease.is_held()
    # Counted from when the second write was sent (at once after the late answer), not from its answer.
    assert lease.safe_until == pytest.approx(sent + LATE + LEASE)
    assert lease.remaining() == pytest.approx(LEASE - IN_TIME)
    assert answers.answered == [("UpdateItem", LATE), ("UpdateItem", IN_TIME)]
    stored = client.get(key)
    assert (stored.owner_name, stored.record_version_number) == (client.owner_name, lease.record_version_number)
    assert stored.fencing_token == lease.fencing_token


def test_answers_that_always_come_too_late_end_in_the_timeout_and_leave_nothing_held(slow, key, virtual_clock):
    client, answers = slow
    answers.late("UpdateItem", *[LATE] * 20)
    started = virtual_clock.monotonic()

    with pytest.raises(LockTimeout, match="only after the lease they would grant had run out"):
        client.acquire(key, timeout=3 * LATE)

    # The timeout, and at most the one write sent before it ended: no retry at once past the deadline.
    assert virtual_clock.monotonic() - started <= 3 * LATE + LATE
    virtual_clock.advance(0)  # the clean-up of our own late writes runs in the background
    assert client.get(key).is_released
    assert client.held_leases() == []


def test_try_acquire_tries_once_more_after_a_late_answer(slow, key):
    client, answers = slow
    answers.late("UpdateItem", LATE, IN_TIME)

    lease = client.try_acquire(key)

    assert lease is not None
    assert lease.is_held()


def test_try_acquire_answered_too_late_twice_raises_unavailable_and_lets_its_write_go(slow, key, virtual_clock):
    client, answers = slow
    answers.late("UpdateItem", LATE, LATE)

    # Not None, which says "held": nobody held it, DynamoDB was too slow to grant a lease.
    with pytest.raises(DynamoDBUnavailable, match="only after the lease they would grant had run out"):
        client.try_acquire(key)

    virtual_clock.advance(0)
    assert client.get(key).is_released
    assert client.try_acquire(key) is not None  # answered in time now


def test_aacquire_is_not_granted_a_late_answer_either(slow, key):
    client, answers = slow
    answers.late("UpdateItem", LATE, IN_TIME)

    lease = asyncio.run(client.aacquire(key, timeout=10.0, keep_alive=False))  # detached: nothing renews it

    assert lease.is_held()
    assert lease.remaining() == pytest.approx(LEASE - IN_TIME)


@pytest.mark.requires("transactions")
@pytest.mark.parametrize("late_request", ["TransactWriteItems", "BatchGetItem"])
def test_a_group_answered_after_its_leases_ran_out_is_not_granted(slow, late_request):
    client, answers = slow
    names = keys(5)
    answers.late(late_request, LATE)

    group = client.acquire_many(names, timeout=10.0)

    assert group.is_held()
    assert all(lease.remaining() > 0 for lease in group)
    assert answers.answered == [(late_request, LATE)]
    assert {client.get(name).record_version_number for name in names} == {
        lease.record_version_number for lease in group
    }


@pytest.mark.requires("transactions")
def test_a_group_whose_first_chunk_ran_out_while_the_second_was_answered_is_not_granted(
    make_client, endpoint_url, virtual_clock
):
    """Each chunk is answered within its own lease, but the first chunk's leases ran out before the last answer."""
    # A patient read time-out: a loaded moto server takes over 0.5 s for a 100-item transaction, and lateness
    # here is the virtual clock's, not the store's.
    # (Its renewals are refused below, so the warning that a call may outlast the lease says nothing here.)
    dynamodb = make_dynamodb(endpoint_url, read_timeout=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RetryBudgetWarning)
        client = make_client(dynamodb, clock=virtual_clock)
    answers = SlowAnswers(dynamodb, virtual_clock)
    names = keys(101)
    # The heartbeat cannot renew on this loaded store: only the caller's requests are answered.
    caller = threading.current_thread()

    def refuse_renewals(request: Any, **_: Any) -> None:
        if not callers_thread(caller):
            raise ReadTimeoutError(endpoint_url=f"injected (a renewal not answered): {request.url}")

    dynamodb.meta.events.register_first("before-send.dynamodb.UpdateItem", refuse_renewals)
    answers.late("BatchGetItem", 0.6 * LEASE)  # the first chunk's tokens (100 keys, one transaction)
    answers.late("UpdateItem", 0.6 * LEASE)  # the second chunk (one key, one write), sent as the first was answered

    group = client.acquire_many(names, timeout=10.0)

    assert answers.answered == [("BatchGetItem", 0.6 * LEASE), ("UpdateItem", 0.6 * LEASE)]
    assert group.is_held()
    assert all(lease.remaining() > 0 for lease in group)


def test_a_takeover_answered_late_just_before_the_deadline_is_not_retried_past_it(
    make_client, dynamodb, key, virtual_clock
):
    """A retry at once after a late answer would be as late: past the deadline it is not sent (one request over)."""
    dead = make_client(clock=virtual_clock)
    dead.acquire(key)
    dead.close(release=False)  # never renewed, never released: a dead holder
    # Its entry in the line needs no refresh (a write) before the deadline: the writes that come late are takeovers.
    client = make_client(dynamodb, clock=virtual_clock, refresh_period=1.0)
    answers = SlowAnswers(dynamodb, virtual_clock)
    # The refused write and the join of the line in time, then the takeover writes late.
    answers.late("UpdateItem", 0.0, 0.0, *[LATE] * 5)
    timeout = LEASE + 0.2 * LEASE
    started = virtual_clock.monotonic()

    with pytest.raises(LockTimeout):
        client.acquire(key, timeout=timeout)

    assert virtual_clock.monotonic() - started <= timeout + LATE
