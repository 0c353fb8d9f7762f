"""Reentrant locks: the context that holds a key shares its hold at no request; anyone else waits; a plain
acquire of one's own lock is WouldDeadlock at once.

A context is the asyncio task, or the thread running sync code: the tests take the lock in one and ask
again from another thread, a task (a child task of the holder included), a thread the holder's task hands
work to, and another context on the holder's own thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from dynalock_django.dynamodb import InvalidLockRequest, Lease, LockTimeout, WouldDeadlock

from ...dynamodb_support import HEARTBEAT, LEASE, PATIENCE, RequestCounter


def test_a_reentrant_acquire_shares_the_hold_and_the_outermost_release_ends_it(
    make_client, dynamodb, key, virtual_clock
):
    client = make_client(dynamodb, clock=virtual_clock)
    counter = RequestCounter(dynamodb)
    outer = client.acquire(key)
    assert dict(counter.calls) == {"UpdateItem": 1}
    counter.reset()
    inner = client.acquire(key, reentrant=True)
    tried = client.try_acquire(key, reentrant=True)
    with client.acquire(key, reentrant=True) as in_block:
        assert {inner.fencing_token, tried.fencing_token, in_block.fencing_token} == {outer.fencing_token}
        assert inner.reentered
        assert tried.reentered
        assert in_block.reentered
        assert not outer.reentered
    assert inner.release() is False  # not the last lease of the hold: the lock stays ours
    assert tried.release() is False
    assert counter.total == 0  # three acquires and three releases, no request
    assert client.held_leases() == [outer]  # one lease renewed, whatever the depth
    assert outer.is_held()
    assert inner.is_held()
    assert not client.get(key).is_released
    counter.reset()
    assert outer.release() is True
    assert dict(counter.calls) == {"UpdateItem": 1}
    assert client.held_leases() == []


def test_any_lease_of_the_hold_may_be_released_last(make_client, dynamodb, key, virtual_clock):
    client = make_client(dynamodb, clock=virtual_clock)
    outer = client.acquire(key)
    inner = client.acquire(key, reentrant=True)
    assert outer.release() is False  # out of order: the inner lease still holds it
    assert outer.release() is False  # released once already: a no-op, not a second count
    counter = RequestCounter(dynamodb)
    assert inner.release() is True
    assert dict(counter.calls) == {"UpdateItem": 1}
    assert client.held_leases() == []  # the lease the holdings renew is the one released
    assert client.get(key).is_released
    assert client.acquire(key, timeout=0).fencing_token > outer.fencing_token


def test_a_plain_acquire_of_a_lock_the_context_holds_is_would_deadlock_at_once(
    make_client, dynamodb, key, virtual_clock
):
    client = make_client(dynamodb, clock=virtual_clock)
    lease = client.acquire(key)
    counter, started = RequestCounter(dynamodb), virtual_clock.monotonic()
    with pytest.raises(WouldDeadlock, match="reentrant=True") as refused:
        client.acquire(key)  # no timeout: today's code waited forever
    assert repr(key) in str(refused.value)
    assert isinstance(refused.value, LockTimeout)  # what code catching a self-held lock's time-out caught
    assert refused.value.holder.fencing_token == lease.fencing_token  # the holding in the way: its own
    assert client.try_acquire(key) is None
    with pytest.raises(WouldDeadlock, match=repr(key)):
        client.acquire_many([key, f"{key}-other"], timeout=30.0)
    assert client.try_acquire_many([key, f"{key}-other"]) is None
    assert counter.total == 0
    assert virtual_clock.monotonic() == started  # not a moment waited
    lease.release()
    assert client.acquire(key).fencing_token > lease.fencing_token  # free again: asked for as usual


def test_a_lock_of_a_group_is_not_shared_and_not_waited_for(make_client, dynamodb, key, virtual_clock):
    client = make_client(dynamodb, clock=virtual_clock)
    group = client.acquire_many([key, f"{key}-b"])
    counter = RequestCounter(dynamodb)
    with pytest.raises(WouldDeadlock, match="acquire_many"):
        client.acquire(key, reentrant=True)  # the group is released as a whole: a lease of it cannot outlive it
    with pytest.raises(WouldDeadlock, match="reentrant=True"):
        client.acquire(key, timeout=30.0)
    assert counter.total == 0
    group.release()
    client.acquire(key, reentrant=True).release()


def test_reentrant_takes_a_bool_and_a_renewed_lease(make_client, key):
    client = make_client()
    with pytest.raises(InvalidLockRequest, match="keep_alive"):
        client.acquire(key, reentrant=True, keep_alive=False)
    with pytest.raises(InvalidLockRequest, match="reentrant="):
        client.try_acquire(key, reentrant="yes")


def test_the_heartbeat_renews_one_hold_once_and_nothing_after_the_outermost_release(
    make_client, dynamodb, key, virtual_clock
):
    client = make_client(dynamodb, clock=virtual_clock)
    outer = client.acquire(key)
    nested = [client.acquire(key, reentrant=True) for _ in range(5)]
    counter = RequestCounter(dynamodb)
    virtual_clock.advance(4 * LEASE)
    renewals = counter.renewals["UpdateItem"]
    assert 0 < renewals <= 4 * LEASE / HEARTBEAT + 1  # one key's heartbeat, not six
    assert outer.is_held()
    for lease in nested:
        lease.release()
    outer.release()
    counter.reset()
    virtual_clock.advance(10 * LEASE)
    assert counter.total == 0
    assert not counter.renewals  # nothing renewed after the outermost release


def test_another_thread_waits_for_the_outermost_release(make_client, key, virtual_clock):
    client = make_client(clock=virtual_clock)
    events: list[str] = []
    outer = client.acquire(key)
    assert _in_thread(lambda: client.try_acquire(key, reentrant=True)) is None
    with pytest.raises(LockTimeout) as refused:  # refused as any holder's lock is: not ours to share
        _in_thread(lambda: client.acquire(key, reentrant=True, timeout=0))
    assert not isinstance(refused.value, WouldDeadlock)
    granted: list[int] = []

    def other() -> None:
        lease = client.acquire(key, reentrant=True, timeout=30.0)
        events.append("other acquired")
        granted.append(lease.fencing_token)
        lease.release()

    thread = threading.Thread(target=other)
    virtual_clock.follow(thread)
    thread.start()
    inner = client.acquire(key, reentrant=True)
    inner.release()  # the inner release leaves the lock held: the other thread waits on
    virtual_clock.advance(0.5)
    assert thread.is_alive()
    events.append("outer released")
    outer.release()
    thread.join(PATIENCE)
    assert not thread.is_alive()
    assert events == ["outer released", "other acquired"]
    assert granted[0] > outer.fencing_token


def test_another_context_on_the_holders_thread_is_another_holder(make_client, key):
    client = make_client()
    with client.lock(key):
        # What asgiref does with one thread for every request's sync code: each runs in its own context.
        def another_request() -> Lease | None:
            client.acquire(f"{key}-own").release()  # a context that held a lock of its own before
            return client.try_acquire(key, reentrant=True)

        assert contextvars.Context().run(another_request) is None
        # A copy run by the holder itself, nested in its code: the holder still.
        shared = contextvars.copy_context().run(client.try_acquire, key, reentrant=True)
        assert shared is not None
        assert shared.reentered
        shared.release()


def test_child_tasks_and_threads_of_the_holding_task_wait_for_it(make_client, key):
    client = make_client()

    async def main() -> None:
        outer = await client.aacquire(key)
        events: list[str] = []

        async def child() -> int:
            assert await client.atry_acquire(key, reentrant=True) is None  # the hold is not inherited
            with pytest.raises(LockTimeout) as refused:
                await client.aacquire(key, reentrant=True, timeout=0)
            assert not isinstance(refused.value, WouldDeadlock)
            lease = await client.aacquire(key, reentrant=True, timeout=PATIENCE)
            events.append("child acquired")
            await lease.arelease()
            return lease.fencing_token

        waiting = asyncio.create_task(child())
        # Work the holding task hands to a thread runs in a copy of its context: not the holder either.
        assert await asyncio.to_thread(client.try_acquire, key, reentrant=True) is None
        inner = await client.aacquire(key, reentrant=True)
        assert inner.fencing_token == outer.fencing_token
        await inner.arelease()
        await asyncio.sleep(0.2)
        assert not waiting.done()
        events.append("outer released")
        await outer.arelease()
        assert await waiting > outer.fencing_token
        assert events == ["outer released", "child acquired"]

    asyncio.run(main())


def _in_thread(call):
    outcome: list = []

    def run() -> None:
        try:
            outcome.append(("value", call()))
        except Exception as error:
            outcome.append(("error", error))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(PATIENCE)
    kind, value = outcome[0]
    if kind == "error":
        raise value
    return value


def test_lock_blocks_nest_with_reentrant_and_the_outermost_block_releases(make_client, dynamodb, key, virtual_clock):
    client = make_client(dynamodb, clock=virtual_clock)
    other = make_client(clock=virtual_clock)
    counter = RequestCounter(dynamodb)
    with client.lock(key, reentrant=True) as outer:
        assert dict(counter.calls) == {"UpdateItem": 1}
        counter.reset()
        with client.lock(key, reentrant=True) as inner:
            assert inner.fencing_token == outer.fencing_token
            assert inner.reentered
        assert counter.total == 0  # the inner block's acquire and release: no request
        assert outer.is_held()
        assert not client.get(key).is_released
        counter.reset()
        waited: list[object] = []
        waiter = threading.Thread(target=lambda: waited.append(client.try_acquire(key, reentrant=True)))
        waiter.start()
        waiter.join(PATIENCE)
        assert waited == [None]  # another thread does not share the hold
        with pytest.raises(WouldDeadlock, match="reentrant=True"), client.lock(key):  # refused at once, as acquire is
            pass
        assert other.try_acquire(key) is None
    assert client.get(key).is_released  # released at the outermost block's end
    assert other.try_acquire(key, reentrant=True).fencing_token > outer.fencing_token
