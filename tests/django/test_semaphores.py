"""dynalock_django.semaphore: at most N holders, sync and async, as a decorator, the block-end rule, the signals."""

from __future__ import annotations

import asyncio
import threading

import pytest

from dynalock_django import LockLost, semaphore, signals
from dynalock_django.client import get_client
from dynalock_django.exceptions import InvalidLockRequest, LockNotAcquired, LockTimeout
from dynalock_django.payload import LockData
from dynalock_django.testing import locks_in_memory

from ..dynamodb_support import PATIENCE, unique

pytestmark = pytest.mark.uses_dynalock


def test_at_most_n_hold_it_each_with_its_own_permit_and_token():
    name = unique("exports")
    with semaphore(name, 2) as first, semaphore(name, 2) as second:
        assert {first.permit, second.permit} == {0, 1}
        assert first.fencing_token != second.fencing_token or first.key != second.key
        with pytest.raises(LockNotAcquired):
            semaphore(name, 2, blocking=False).acquire()
    with semaphore(name, 2, blocking=False) as third:  # both let go: a permit is free again
        assert third.is_held()


def test_a_third_holder_waits_for_a_permit_and_times_out_when_none_frees():
    name = unique("exports")
    with semaphore(name, 1), pytest.raises(LockTimeout):
        semaphore(name, 1, timeout=0.3).acquire()


def test_a_waiting_holder_gets_the_permit_another_lets_go():
    name = unique("exports")
    held = semaphore(name, 1)
    held.acquire()
    releaser = threading.Timer(0.2, held.release)
    releaser.start()
    with semaphore(name, 1, timeout=PATIENCE) as lease:
        assert lease.is_held()
    releaser.join()


def test_the_payload_says_who_holds_each_permit(django_user_model):
    alice = django_user_model.objects.create_user("alice")
    name = unique("exports")
    with semaphore(name, 3, purpose="export", user=alice) as lease:
        stored = get_client().get(lease.key)
        data = LockData.from_bytes(stored.data)
        assert (data.purpose, data.username) == ("export", "alice")


@pytest.mark.parametrize("permits", [0, -1, True, 2.0, "3", None, 101])
def test_a_permit_count_that_is_not_a_whole_number_of_one_or_more_is_refused(permits):
    with pytest.raises(InvalidLockRequest, match=r"semaphore\(permits\)=.*whole number of 1 or more"):
        semaphore("exports", permits)


def test_another_permit_count_for_the_same_name_is_refused():
    name = unique("exports")
    with semaphore(name, 2), pytest.raises(InvalidLockRequest, match="permit"):
        semaphore(name, 3).acquire()


def test_async_with_waits_as_a_coroutine_and_the_permits_are_counted():
    name = unique("exports")

    async def scenario() -> list[int]:
        async with semaphore(name, 2) as first, semaphore(name, 2) as second:
            with pytest.raises(LockNotAcquired):
                await semaphore(name, 2, blocking=False).aacquire()
            waiter = asyncio.ensure_future(semaphore(name, 2, timeout=PATIENCE).aacquire())
            await asyncio.sleep(0.1)
            assert not waiter.done()
            permits = [first.permit, second.permit]
        third = await waiter
        await third.arelease()
        return permits

    assert sorted(asyncio.run(scenario())) == [0, 1]


def test_as_a_decorator_each_call_takes_a_permit_of_its_own():
    name = unique("exports")
    seen = []

    @semaphore(name, 1)
    def export() -> str:
        with pytest.raises(LockNotAcquired):  # the call holds the only permit
            semaphore(name, 1, blocking=False).acquire()
        seen.append(True)
        return "done"

    assert export() == export() == "done"
    assert len(seen) == 2
    with semaphore(name, 1, blocking=False):  # released after each call
        pass


def test_async_decorator():
    name = unique("exports")

    @semaphore(name, 1)
    async def export() -> str:
        with pytest.raises(LockNotAcquired):
            await semaphore(name, 1, blocking=False).aacquire()
        return "done"

    assert asyncio.run(export()) == "done"


def test_the_lease_signals_are_sent_for_each_permit():
    name = unique("exports")
    sent = []

    def record(signal_name):
        return lambda sender, lease, **kwargs: sent.append((signal_name, sender, lease.key))

    receivers = {
        signal: record(label)
        for signal, label in [(signals.lease_acquired, "acquired"), (signals.lease_released, "released")]
    }
    for signal, receiver in receivers.items():
        signal.connect(receiver)
    try:
        with semaphore(name, 2) as lease:
            pass
    finally:
        for signal, receiver in receivers.items():
            signal.disconnect(receiver)
    assert sent == [("acquired", lease.key, lease.key), ("released", lease.key, lease.key)]


# The block-end rule (docs/guarantees.md), as for every lock of the Django layer


def test_a_block_that_succeeded_keeps_its_result_when_the_release_gets_no_answer():
    with locks_in_memory() as memory:
        failed = []
        signals.lease_release_failed.connect(receiver := lambda sender, lease, **kwargs: failed.append(sender))
        try:
            with semaphore("exports", 2) as lease:
                memory.faults.hang()  # DynamoDB stops answering before the release
            memory.faults.heal()
        finally:
            signals.lease_release_failed.disconnect(receiver)
        assert lease.release_unconfirmed
        assert failed == [lease.key]


def test_a_block_that_raised_keeps_its_exception_and_the_release_failure_is_noted_on_it():
    with locks_in_memory() as memory:
        with pytest.raises(KeyError) as raised, semaphore("exports", 2):
            memory.faults.hang()
            raise KeyError("the block's own")
        memory.faults.heal()
    assert any("releasing" in note for note in raised.value.__notes__)


def test_a_permit_lost_during_the_block_raises_lock_lost_at_its_end():
    with locks_in_memory() as memory:
        other = memory.new_client()
        with pytest.raises(LockLost), semaphore("exports", 2) as lease:
            other.force_release(other.get(lease.key), released_by="ops")
            memory.advance(memory.client.heartbeat_period * 2)  # the heartbeat finds it gone
