"""The awaitable API: the same protocol as the sync one, waiting as coroutines (no thread per waiter)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from asgiref.sync import sync_to_async

from dynalock_django.dynamodb import ClientClosed, LockTimeout
from dynalock_django.dynamodb.acquiring.line_seats import Seat
from dynalock_django.dynamodb.aws.call_threads import CALL_THREADS

from ..dynamodb_support import LEASE, PATIENCE, RequestCounter, wait_for


def test_aacquire_takes_a_lease_the_heartbeat_renews_and_arelease_ends_it(make_client, dynamodb, key, virtual_clock):
    # The virtual clock: a loaded machine's late heartbeat cannot lapse the lease in real time.
    client = make_client(dynamodb, clock=virtual_clock)

    async def main() -> None:
        lease = await client.aacquire(key, data=b"async")
        assert client.held_leases() == [lease]  # in the holdings, as a sync acquire's lease is
        first_version = lease.record_version_number
        virtual_clock.advance(LEASE * 1.5)  # the heartbeat's renewals fall due on the way, and run
        assert lease.is_held()  # the heartbeat renewed it
        assert lease.record_version_number != first_version
        assert (await client.aget(key)).record_version_number == lease.record_version_number
        await lease.aextend(LEASE * 2)
        assert lease.lease_duration == LEASE * 2
        assert await lease.arelease() is True
        assert client.held_leases() == []
        stored = await client.aget(key)
        assert stored.is_released
        assert stored.data == b"async"

    asyncio.run(main())


def test_an_uncontended_aacquire_and_arelease_cost_two_requests(make_client, dynamodb, key):
    counter = RequestCounter(dynamodb)
    client = make_client(dynamodb, lease_duration=60.0, heartbeat_period=15.0)

    async def main() -> None:
        lease = await client.aacquire(key)
        await lease.arelease()

    asyncio.run(main())
    assert dict(counter.calls) == {"UpdateItem": 2}


def test_atry_acquire_gives_none_while_another_client_holds_the_lock(make_client, key):
    holder, other = make_client(), make_client()

    async def main() -> None:
        lease = await holder.atry_acquire(key)
        assert lease is not None
        assert await other.atry_acquire(key) is None
        assert await holder.atry_acquire(key) is None  # held by this very client
        await lease.arelease()
        taken = await other.atry_acquire(key)
        assert taken is not None
        assert taken.fencing_token > lease.fencing_token
        await taken.arelease()

    asyncio.run(main())


def test_aacquire_times_out_naming_the_holder_in_another_client(make_client, key):
    holder, waiter = make_client(), make_client()
    # A lease no loaded machine's pause runs out (a starved 1 s one did, on CI): the wait is what is asserted.
    held = holder.acquire(key, data=b"x", lease_duration=60.0)
    started = time.monotonic()
    with pytest.raises(LockTimeout) as timed_out:
        asyncio.run(waiter.aacquire(key, timeout=0.3))
    assert time.monotonic() - started >= 0.3
    assert timed_out.value.holder.owner_name == holder.owner_name
    held.release()


def test_coroutines_queued_behind_a_local_holder_time_out_naming_it(make_client, key):
    client = make_client()

    async def main() -> None:
        lease = await client.aacquire(key)
        # The first waits for the lease to end; the second waits for the first's turn: both name the holder.
        results = await asyncio.gather(
            client.aacquire(key, timeout=0.3), client.aacquire(key, timeout=0.2), return_exceptions=True
        )
        for result in results:
            assert isinstance(result, LockTimeout)
            assert result.holder.fencing_token == lease.fencing_token
        await lease.arelease()

    asyncio.run(main())


def test_a_coroutine_gets_the_lock_a_thread_of_the_same_client_releases(make_client, key):
    client = make_client()
    lease = client.acquire(key)
    threading.Timer(0.2, lease.release).start()

    async def main() -> float:
        started = time.monotonic()
        taken = await client.aacquire(key, timeout=5)
        waited = time.monotonic() - started
        await taken.arelease()
        return waited

    waited = asyncio.run(main())
    assert 0.2 <= waited < 2.0


def test_a_cancelled_waiter_leaves_no_lease_behind(make_client, key):
    client = make_client()

    async def main() -> None:
        lease = await client.aacquire(key)
        waiting = asyncio.create_task(client.aacquire(key))
        await asyncio.sleep(0.05)
        waiting.cancel()
        await lease.arelease()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        again = await client.aacquire(key, timeout=2)  # the queue moved on past the cancelled waiter
        await again.arelease()

    asyncio.run(main())
    assert client.held_leases() == []


def test_closing_the_client_ends_the_wait_of_its_coroutines(make_client, key):
    client = make_client()

    async def main() -> None:
        await client.aacquire(key)
        waiting = asyncio.create_task(client.aacquire(key))
        await asyncio.sleep(0.05)
        await asyncio.to_thread(client.close)
        with pytest.raises(ClientClosed):
            await waiting
        with pytest.raises(ClientClosed):
            await client.atry_acquire(key)

    asyncio.run(main())


def test_aacquire_many_takes_all_or_waits_and_the_group_areleases(make_client, key):
    client, other = make_client(), make_client()
    keys = [f"{key}-a", f"{key}-b"]

    async def main() -> None:
        blocker = await other.aacquire(keys[1])
        assert await client.atry_acquire_many(keys) is None
        asyncio.get_running_loop().call_later(0.2, blocker.release)
        group = await client.aacquire_many(keys, timeout=5)
        assert group.is_held()
        assert sorted(lease.key for lease in client.held_leases()) == keys
        assert await group.arelease() is True
        assert client.held_leases() == []
        group = await client.atry_acquire_many(keys)
        assert group is not None
        with pytest.raises(LockTimeout):
            await other.aacquire_many(keys, timeout=0.2)
        await group.arelease()

    asyncio.run(main())


def test_a_thousand_coroutines_wait_for_one_key_without_threads(make_client, key, store):
    """Each waiter costs a coroutine: threads stay flat, the loop and its default executor answer meanwhile."""
    waiters = 1000 if store.name == "dynalite" else 250  # moto serves one request at a time: fewer, to keep CI quick
    client = make_client(lease_duration=10.0, heartbeat_period=2.5)
    threads_before = threading.active_count()

    async def main() -> None:
        holding = 0
        tokens: list[int] = []
        most_threads = threads_before

        async def waiter() -> None:
            nonlocal holding, most_threads
            lease = await client.aacquire(key, timeout=120)
            holding += 1
            assert holding == 1, "two holders at once"
            most_threads = max(most_threads, threading.active_count())
            await asyncio.sleep(0)  # let any other would-be holder run now
            tokens.append(lease.fencing_token)
            holding -= 1
            await lease.arelease()

        first = await client.aacquire(key)
        tasks = [asyncio.create_task(waiter()) for _ in range(waiters)]
        await asyncio.sleep(0.3)  # every waiter is waiting now

        started = time.monotonic()
        # Bounded, so a starved executor fails here rather than hanging the test.
        await asyncio.wait_for(sync_to_async(lambda: None, thread_sensitive=False)(), timeout=5.0)
        assert time.monotonic() - started < 1.0, "the loop's default executor is starved"
        started = time.monotonic()
        await asyncio.sleep(0.01)
        assert time.monotonic() - started < 0.5, "the event loop is blocked"
        most_threads = max(most_threads, threading.active_count())

        tokens.append(first.fencing_token)
        await first.arelease()
        await asyncio.gather(*tasks)
        assert len(tokens) == waiters + 1
        assert tokens == sorted(set(tokens)), "every holder in turn, each with a larger token"
        assert most_threads <= threads_before + CALL_THREADS + 2  # the call threads and the heartbeat, no more

    asyncio.run(main())


def test_a_lease_won_by_an_attempt_whose_caller_was_cancelled_is_released(make_client, dynamodb, key):
    client = make_client(dynamodb)
    slow_write = lambda **kwargs: time.sleep(0.3)  # noqa: E731 - the write is under way when its caller gives up
    dynamodb.meta.events.register("before-send.dynamodb.UpdateItem", slow_write)

    async def main() -> None:
        attempt = asyncio.create_task(client.atry_acquire(key))
        await asyncio.sleep(0.1)
        attempt.cancel()
        with pytest.raises(asyncio.CancelledError):
            await attempt

    asyncio.run(main())
    # The release lands in the table a moment before the client forgets the lease: wait for both.
    wait_for(lambda: client.held_leases() == [] and client.get(key) is not None and client.get(key).is_released, 5.0)


@pytest.mark.parametrize("form", ["aacquire", "alock"])
def test_a_cancel_that_lands_after_the_grant_on_the_calls_way_out_leaves_nothing_held(
    make_client, key, form, monkeypatch
):
    """Won, then cancelled while the call gives up its seat (a call-thread hop, a request on a real store):
    the lease is released, not left held and renewed by nobody's call (found by review)."""
    client, other = make_client(), make_client()
    seats = client.process_state.seats
    vacating, go_on = threading.Event(), threading.Event()
    vacate = seats.vacate

    def slow_vacate(*args: object, **kwargs: object) -> object:
        vacating.set()
        go_on.wait(5)  # the call thread is still busy leaving the line when the cancel lands
        return vacate(*args, **kwargs)

    monkeypatch.setattr(seats, "vacate", slow_vacate)
    # As if the entry might still be in line: a grant takes it out, so the hop follows a grant only so (the
    # release of what was won guards every way out, this hop the one a test can hold open).
    monkeypatch.setattr(Seat, "may_be_in_line", True)

    async def take() -> None:
        if form == "alock":
            async with client.alock(key, timeout=5):
                await asyncio.sleep(3600)
        else:
            await client.aacquire(key, timeout=5)

    async def main() -> None:
        task = asyncio.create_task(take())
        await asyncio.to_thread(vacating.wait, 5)
        task.cancel()
        go_on.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    wait_for(lambda: client.held_leases() == [], PATIENCE)
    assert client.held_leases() == []
    assert other.try_acquire(key) is not None


def test_aacquire_many_waits_without_requests_while_this_client_holds_a_key(make_client, dynamodb, key):
    client = make_client(dynamodb)
    keys = [f"{key}-a", f"{key}-b"]
    held = client.acquire(keys[1])
    counter = RequestCounter(dynamodb)

    async def main() -> None:
        with pytest.raises(LockTimeout) as timed_out:
            await client.aacquire_many(keys, timeout=0.2)
        assert timed_out.value.holders[0].fencing_token == held.fencing_token
        asyncio.get_running_loop().call_later(0.2, held.release)
        group = await client.aacquire_many(keys, timeout=5)
        await group.arelease()

    asyncio.run(main())
    assert counter.calls["GetItem"] == 0  # waited on the local holder, not by polling it


def test_a_release_queued_behind_busy_call_threads_is_sent_though_its_caller_was_cancelled(make_client, dynamodb, key):
    client = make_client(dynamodb)
    lease = client.acquire(key)
    reads_may_go_on = threading.Event()

    def hold_reads(**_) -> None:  # None: then botocore sends the request (a value would be its answer)
        reads_may_go_on.wait(PATIENCE)

    dynamodb.meta.events.register_first("before-send.dynamodb.GetItem", hold_reads)

    async def main() -> None:
        reads = [asyncio.create_task(client.aget(key)) for _ in range(CALL_THREADS)]  # every call thread busy
        await asyncio.sleep(0.1)
        release = asyncio.create_task(lease.arelease())
        await asyncio.sleep(0.1)
        assert lease.state == "held"  # the release waits in the queue: every call thread is busy
        release.cancel()  # a request that ended (a client gone) cancels the view's task, as it leaves its block
        reads_may_go_on.set()
        await asyncio.gather(*reads)

    asyncio.run(main())
    wait_for(lambda: client.get(key).is_released, PATIENCE)
