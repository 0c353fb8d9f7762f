"""lock_object / lock_model / lock_key against the real local endpoint."""

from __future__ import annotations

import asyncio
import threading

import pytest
from django.test import override_settings

from dynalock_django import lock_key, lock_model, lock_object, signals
from dynalock_django.client import get_client
from dynalock_django.exceptions import LockLost, LockNotAcquired, LockTimeout
from dynalock_django.keys import key_for_instance
from dynalock_django.payload import LockData

from ..dynamodb_support import LEASE, PATIENCE, RequestCounter
from .testapp.models import Account

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]


@pytest.fixture
def account():
    return Account.objects.create(name="Acme")


def test_lock_object_holds_the_rows_key_and_says_who_holds_it(account, django_user_model):
    alice = django_user_model.objects.create_user("alice")
    with lock_object(account, purpose="edit", user=alice) as lease:
        stored = get_client().get(key_for_instance(account))
        assert not stored.is_released
        assert stored.fencing_token == lease.fencing_token
        data = LockData.from_bytes(stored.data)
        assert (data.purpose, data.username, data.user_id) == ("edit", "alice", str(alice.pk))
        assert lease.is_held()
        assert 0 < lease.remaining() <= LEASE
    assert get_client().get(key_for_instance(account)).is_released
    assert not lease.is_held()


def test_one_lock_object_call_costs_two_requests(account, dynalock):
    # A lease no loaded machine's pause brings a renewal of (a short one's heartbeat was counted under a profiler).
    with override_settings(DYNALOCK={**dynalock, "LEASE_DURATION": 60.0, "HEARTBEAT_PERIOD": 20.0}):
        requests_made = RequestCounter(get_client().dynamodb)
        with lock_object(account):  # the row's first lock: its item is new, so it looks for readers once
            pass
        assert dict(requests_made.calls) == {"UpdateItem": 2, "BatchGetItem": 1}
        requests_made.reset()
        with lock_object(account):  # the row's writer: its grant shows no reader's mark, so it reads nothing more
            pass
        assert dict(requests_made.calls) == {"UpdateItem": 2}


def test_one_lock_key_call_costs_two_requests(requests_made):
    with lock_key("nightly-billing"):  # a name has no readers: nothing to look for
        pass
    assert dict(requests_made.calls) == {"UpdateItem": 2}


def test_non_blocking_refusal_names_the_holder(account, other_holder):
    data = LockData(purpose="edit", username="bob").to_bytes()
    held = other_holder.acquire(key_for_instance(account), data=data)
    with pytest.raises(LockNotAcquired) as refused:
        lock_object(account, blocking=False).acquire()
    assert not isinstance(refused.value, LockTimeout)
    assert LockData.from_bytes(refused.value.holder.data).username == "bob"
    held.release()


def test_timeout_waits_then_raises_lock_timeout(account, other_holder):
    held = other_holder.acquire(key_for_instance(account))
    with pytest.raises(LockTimeout, match=r"Timed out after 0.3s"):
        lock_object(account, timeout=0.3).acquire()
    held.release()


def test_a_waiter_gets_the_lock_when_it_is_released(account, other_holder):
    held = other_holder.acquire(key_for_instance(account))
    threading.Timer(0.2, held.release).start()
    with lock_object(account, timeout=5) as lease:
        assert lease.fencing_token > held.fencing_token


def test_lock_model_and_lock_key_need_no_query(django_assert_num_queries):
    with django_assert_num_queries(0):
        with lock_model(Account, 12345) as lease:
            assert lease.key == "testapp.account:12345"
        with lock_key("nightly-billing") as lease:
            assert lease.key == "nightly-billing"


def test_as_a_decorator_each_call_takes_the_lock_afresh():
    tokens = []

    @lock_key("report")
    def build_report():
        tokens.append(get_client().get("report").fencing_token)

    build_report()
    build_report()
    assert tokens[0] < tokens[1]
    assert get_client().get("report").is_released


def test_an_exception_in_the_block_is_never_swallowed(account):
    with pytest.raises(ZeroDivisionError), lock_object(account):
        1 / 0  # noqa: B018
    assert get_client().get(key_for_instance(account)).is_released


def test_a_block_whose_lease_was_lost_raises_lock_lost_at_its_end(account, other_holder):
    with pytest.raises(LockLost), lock_object(account) as lease:
        other_holder.force_release(other_holder.get(lease.key), released_by="carol")
        assert lease.wait_until_lost(PATIENCE)


def test_signals_tell_acquired_released_and_lost(account, other_holder):
    seen = []
    told_lost = threading.Event()

    def record(signal_name):
        def receiver(sender, lease, **_):
            seen.append((signal_name, sender, lease.fencing_token))
            if signal_name == "lost":
                told_lost.set()

        return receiver

    receivers = {name: record(name) for name in ("acquired", "released", "lost")}
    signals.lease_acquired.connect(receivers["acquired"])
    signals.lease_released.connect(receivers["released"])
    signals.lease_lost.connect(receivers["lost"])
    try:
        with lock_object(account) as first:
            pass
        second = lock_object(account).acquire()
        other_holder.force_release(other_holder.get(second.key), released_by="carol")
        assert second.wait_until_lost(PATIENCE)
        # The heartbeat's thread sends the signal just after wait_until_lost returns: wait for it, not a race.
        assert told_lost.wait(PATIENCE)
    finally:
        signals.lease_acquired.disconnect(receivers["acquired"])
        signals.lease_released.disconnect(receivers["released"])
        signals.lease_lost.disconnect(receivers["lost"])
    key = first.key
    assert seen == [
        ("acquired", key, first.fencing_token),
        ("released", key, first.fencing_token),
        ("acquired", key, second.fencing_token),
        ("lost", key, second.fencing_token),
    ]


def test_async_with_takes_the_lock_off_the_event_loop(account):
    async def edit():
        ticks = 0

        async def tick():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        ticker = asyncio.create_task(tick())
        async with lock_object(account) as lease:
            held = lease.is_held()
        ticker.cancel()
        return held, ticks

    held, ticks = asyncio.run(edit())
    assert held
    assert get_client().get(key_for_instance(account)).is_released
    assert ticks >= 1  # the loop kept running while the lock was taken


def test_lock_key_decorating_a_coroutine_holds_the_lock_while_it_runs(account):
    @lock_key("async-job")
    async def job():
        return get_client().get("async-job").is_released

    assert asyncio.run(job()) is False
    assert get_client().get("async-job").is_released
