"""``async with`` a lock waits as a coroutine: no thread is held while it waits, and the app stays responsive."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from asgiref.sync import sync_to_async

from dynalock_django import lock_key, lock_objects, signals
from dynalock_django.client import get_client
from dynalock_django.exceptions import LockLost, LockNotAcquired
from dynalock_django.keys import key_for_instance

from .testapp.models import Account

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]


def test_coroutines_take_a_key_in_turn_while_the_default_executor_stays_free():
    acquired: list[int] = []

    def on_acquired(sender, lease, **kwargs):
        acquired.append(lease.fencing_token)

    signals.lease_acquired.connect(on_acquired)
    held = lock_key("async-turns").acquire()  # held by this process's client: the coroutines wait locally

    async def main() -> tuple[list[int], int]:
        holding = 0
        tokens: list[int] = []
        threads = threading.active_count()

        async def edit() -> None:
            nonlocal holding, threads
            async with lock_key("async-turns", timeout=30) as lease:
                holding += 1
                assert holding == 1, "two holders at once"
                await asyncio.sleep(0)
                tokens.append(lease.fencing_token)
                holding -= 1
                threads = max(threads, threading.active_count())

        tasks = [asyncio.create_task(edit()) for _ in range(50)]
        await asyncio.sleep(0.2)
        started = time.monotonic()
        await asyncio.wait_for(sync_to_async(lambda: None, thread_sensitive=False)(), timeout=5.0)
        assert time.monotonic() - started < 1.0, "the loop's default executor is starved by waiters"
        await sync_to_async(held.release)()
        await asyncio.gather(*tasks)
        return tokens, threads

    threads_before = threading.active_count()
    try:
        tokens, most_threads = asyncio.run(main())
    finally:
        signals.lease_acquired.disconnect(on_acquired)
    assert len(tokens) == 50
    assert tokens == sorted(set(tokens))
    assert acquired[1:] == tokens  # the async path sends lease_acquired too
    assert most_threads <= threads_before + 15  # the client's call threads, not one per waiter
    assert get_client().get(lock_key("async-turns").key).is_released


def test_async_with_a_non_blocking_lock_refuses_naming_the_holder():
    held = lock_key("async-refused", purpose="import").acquire()

    async def main() -> None:
        async with lock_key("async-refused", blocking=False):
            pass

    with pytest.raises(LockNotAcquired) as refused:
        asyncio.run(main())
    assert refused.value.holder.fencing_token == held.fencing_token
    held.release()


def test_async_with_lock_objects_holds_every_row_and_releases_them():
    first, second = Account.objects.create(name="a"), Account.objects.create(name="b")

    async def main() -> list[bool]:
        async with lock_objects(first, second) as group:
            return [not (await get_client().aget(key)).is_released for key in group.keys]

    assert asyncio.run(main()) == [True, True]
    assert all(get_client().get(key_for_instance(row)).is_released for row in (first, second))


def test_a_lock_lost_in_the_block_raises_at_its_end_or_is_noted_on_the_blocks_own_exception():
    async def main(fail: bool) -> None:
        async with lock_key("async-lost"):
            client = get_client()
            await sync_to_async(client.force_release)(await client.aget("async-lost"), released_by="operator")
            if fail:
                raise ValueError("the block failed")

    with pytest.raises(LockLost):
        asyncio.run(main(fail=False))
    with pytest.raises(ValueError, match="the block failed") as failed:
        asyncio.run(main(fail=True))
    assert any("releasing 'async-lost' also failed" in note for note in failed.value.__notes__)


@pytest.mark.parametrize("way", ["sync", "async"])
def test_a_failing_lease_acquired_receiver_leaves_the_lock_released(way):
    class Refused(Exception):
        pass

    def refuse(**_):
        raise Refused

    async def enter() -> None:
        async with lock_key("refused-by-a-receiver"):
            pass

    def enter_sync() -> None:
        with lock_key("refused-by-a-receiver"):
            pass

    signals.lease_acquired.connect(refuse)
    try:
        with pytest.raises(Refused):
            asyncio.run(enter()) if way == "async" else enter_sync()
    finally:
        signals.lease_acquired.disconnect(refuse)
    assert get_client().get(lock_key("refused-by-a-receiver").key).is_released
    assert get_client().held_leases() == []
