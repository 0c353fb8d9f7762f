"""``async with client.alock(key) as lease:``: ``lock``'s twin for coroutines.

It takes the lock with ``aacquire`` and gives it back at the block's end by the rule every block follows
(docs/guarantees.md, "A release that fails after the work"): the block's own exception wins, a lease lost
during the block raises LockLost, an unanswered release after a block that succeeded lets it stand. Nested
with ``reentrant=True`` in one task it shares the hold; a task cancelled while it waits holds nothing.
The virtual clock, on which the coroutines' pauses and the heartbeat wait: time moves only when they do.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from dynalock_django.dynamodb import LockLost, WouldDeadlock

from ...dynamodb_support import LEASE, PATIENCE, RequestCounter
from .test_release_after_success import RELEASE_LOG, failing_writes

PATIENT = {"lease_duration": 60.0, "heartbeat_period": 20.0}  # no renewal among the counted requests


def test_nested_reentrant_blocks_share_the_hold_and_the_outermost_releases_it(
    make_client, dynamodb, key, virtual_clock
):
    client = make_client(dynamodb, clock=virtual_clock, **PATIENT)
    other = make_client(clock=virtual_clock)
    counter = RequestCounter(dynamodb)

    async def main() -> None:
        async with client.alock(key, reentrant=True, data=b"outer") as outer:
            assert dict(counter.calls) == {"UpdateItem": 1}
            counter.reset()
            async with client.alock(key, reentrant=True) as inner:
                assert inner.fencing_token == outer.fencing_token
                assert inner.reentered
                async with client.alock(key, reentrant=True) as innermost:
                    assert innermost.fencing_token == outer.fencing_token
            assert counter.total == 0  # two inner blocks, taken and ended: no request
            assert outer.is_held()
            assert not client.get(key).is_released  # the lock is still the outer block's
            assert other.try_acquire(key) is None
        assert outer.state == "released"
        assert client.get(key).is_released  # released at the outermost block's end
        assert client.held_leases() == []

    asyncio.run(main())
    assert other.try_acquire(key).fencing_token > 0


def test_a_plain_nested_block_is_would_deadlock_at_once_and_another_task_waits(
    make_client, dynamodb, key, virtual_clock
):
    client = make_client(dynamodb, clock=virtual_clock, **PATIENT)

    async def main() -> None:
        events: list[str] = []

        async def another_task() -> int:
            async with client.alock(key, reentrant=True, timeout=PATIENCE) as lease:  # not this task's hold
                events.append("other in")
                return lease.fencing_token

        async with client.alock(key) as outer:
            counter, started = RequestCounter(dynamodb), virtual_clock.monotonic()
            with pytest.raises(WouldDeadlock, match="reentrant=True"):
                async with client.alock(key, timeout=30.0):
                    pytest.fail("the block ran under its own task's lock")
            with pytest.raises(WouldDeadlock):
                async with client.alock(key):  # no timeout: this waited forever
                    pass
            assert counter.total == 0
            assert virtual_clock.monotonic() == started  # not a moment waited
            assert outer.is_held()  # the refused block released nothing
            waiting = asyncio.create_task(another_task())
            for _ in range(5):
                await asyncio.sleep(0)
            assert not waiting.done()
            events.append("outer out")
        assert await asyncio.wait_for(waiting, PATIENCE) > outer.fencing_token
        assert events == ["outer out", "other in"]

    asyncio.run(main())


def test_a_lease_lost_during_the_block_raises_lock_lost_at_its_end(make_client, key, virtual_clock):
    client, operator = make_client(clock=virtual_clock), make_client(clock=virtual_clock)

    async def main() -> None:
        with pytest.raises(LockLost):
            async with client.alock(key) as lease:
                operator.force_release(operator.get(key), released_by="an operator")
                virtual_clock.advance(LEASE)  # the next renewal finds it released
                assert lease.state == "lost"

    asyncio.run(main())


def test_the_blocks_own_exception_wins_and_an_unanswered_release_after_success_stands(
    make_client, dynamodb, key, virtual_clock, caplog
):
    client = make_client(dynamodb, clock=virtual_clock)

    async def failing() -> None:
        async with client.alock(key):
            failing_writes(dynamodb)
            raise ZeroDivisionError

    async def succeeding() -> str:
        async with client.alock(key) as lease:
            failing_writes(dynamodb)  # the release's UpdateItem gets a 500
        assert lease.release_unconfirmed
        return "done"

    with pytest.raises(ZeroDivisionError) as raised:
        asyncio.run(failing())
    assert any("also failed" in note for note in raised.value.__notes__)
    virtual_clock.advance(LEASE + 0.5)  # the lease its failed release left runs out
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="dynalock_django"):
        assert asyncio.run(succeeding()) == "done"
    [warning] = [record for record in caplog.records if record.name == RELEASE_LOG]
    assert "frees itself within" in warning.getMessage()  # (the acquire warned of its takeover: the first's item)
    assert client.held_leases() == []


def test_cancelled_while_waiting_it_holds_nothing_and_cancelled_in_the_block_it_releases(
    make_client, key, virtual_clock
):
    client, holder = make_client(clock=virtual_clock), make_client(clock=virtual_clock, **PATIENT)
    held = holder.acquire(key)
    entered: list[str] = []

    async def blocked() -> None:
        async with client.alock(key, timeout=30.0):
            entered.append("in")

    async def main() -> None:
        waiting = asyncio.create_task(blocked())
        for _ in range(5):
            await asyncio.sleep(0)
        assert not waiting.done()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert entered == []
        assert client.held_leases() == []
        held.release()

        in_block = asyncio.Event()

        async def working() -> None:
            async with client.alock(key, timeout=PATIENCE):
                in_block.set()
                await asyncio.sleep(3600)  # cancelled here

        working_task = asyncio.create_task(working())
        await asyncio.wait_for(in_block.wait(), PATIENCE)
        assert len(client.held_leases()) == 1
        working_task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await working_task
        assert client.held_leases() == []
        assert client.get(key).is_released  # the release was sent though its task was cancelled

    asyncio.run(main())
    assert holder.try_acquire(key) is not None  # nothing left behind by either cancelled task


def test_a_lease_and_a_group_are_async_context_managers_by_the_same_rule(make_client, key, virtual_clock):
    """``async with await client.aacquire(key)`` (and a group's): released at the end, LockLost if lost meanwhile."""
    client, operator = make_client(clock=virtual_clock), make_client(clock=virtual_clock)
    keys = [f"{key}-a", f"{key}-b"]

    async def main() -> None:
        async with await client.aacquire(key) as lease, await client.aacquire_many(keys) as group:
            assert lease.is_held()
            assert group.is_held()
        assert lease.state == "released"
        assert all(member.state == "released" for member in group)
        with pytest.raises(LockLost):
            async with await client.aacquire_many(keys) as lost_group:
                operator.force_release(operator.get(keys[1]), released_by="an operator")
                virtual_clock.advance(LEASE)  # the next renewal finds it released
                assert lost_group[keys[1]].state == "lost"

    asyncio.run(main())
    assert [operator.get(name).is_released for name in [key, *keys]] == [True, True, True]
