"""A readers-writer lock's reader and writer in one context: WouldDeadlock at once, with no request.

The context (the thread running sync code, the asyncio task) that holds a read and asks to write would
wait for its own reader; the one that holds the write and asks to read would wait for its own writer.
Each is refused at once (the try forms: None at once), as a plain acquire of a key the context holds is;
another thread or task waits as before. The client renews rarely (a 60 s lease), so the counts are the
calls' own, and its clock is the virtual clock, which a wait of the test's own thread moves: a refusal
leaves it where it was.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from dynalock_django.dynamodb import LockTimeout, WouldDeadlock

from ...dynamodb_support import LEASE, PATIENCE, RequestCounter

PATIENT = {"lease_duration": 60.0, "heartbeat_period": 20.0}  # no renewal among the counted requests
TIMEOUT = 30.0  # what the refused calls would wait before: half a lease, and far more than the test advances


def test_the_context_holding_a_read_asking_to_write_is_would_deadlock_at_once(
    make_client, dynamodb, key, virtual_clock
):
    client = make_client(dynamodb, clock=virtual_clock, **PATIENT)
    rw = client.readers_writer(key)
    reader = rw.acquire_read(timeout=0)
    counter, started = RequestCounter(dynamodb), virtual_clock.monotonic()
    with pytest.raises(WouldDeadlock, match="release the read before asking to write") as refused:
        rw.acquire_write(timeout=TIMEOUT)
    assert repr(key) in str(refused.value)
    assert refused.value.holder.fencing_token == reader.fencing_token  # in the way: its own reader
    with pytest.raises(WouldDeadlock):
        client.readers_writer(key).acquire_write(timeout=TIMEOUT, reentrant=True)  # another face, the same lock
    with pytest.raises(WouldDeadlock):
        rw.acquire_write()  # no timeout: this waited forever before
    assert rw.try_acquire_write() is None
    assert counter.total == 0
    assert virtual_clock.monotonic() == started  # not a moment waited
    assert client.readers_writer(f"{key}-other").try_acquire_write() is not None  # another lock: asked as usual
    reader.release()
    counter.reset()
    writer = rw.acquire_write(timeout=0)  # the read released: the write is asked for as usual
    assert writer.is_held()
    assert counter.total > 0


def test_the_context_holding_the_write_asking_to_read_is_would_deadlock_at_once(
    make_client, dynamodb, key, virtual_clock
):
    client = make_client(dynamodb, clock=virtual_clock, **PATIENT)
    rw = client.readers_writer(key)
    for take_write in (lambda: rw.acquire_write(timeout=0), lambda: client.acquire(key, timeout=0)):
        writer = take_write()  # the writer's lease, or the plain lock of the name: the write item either way
        counter, started = RequestCounter(dynamodb), virtual_clock.monotonic()
        with pytest.raises(WouldDeadlock, match="release the write before asking to read") as refused:
            rw.acquire_read(timeout=TIMEOUT)
        assert repr(key) in str(refused.value)
        assert refused.value.holder.fencing_token == writer.fencing_token
        assert rw.try_acquire_read() is None
        assert counter.total == 0
        assert virtual_clock.monotonic() == started
        writer.release()
    reader = rw.acquire_read(timeout=0)
    assert reader.is_held()


def test_another_thread_still_waits_for_the_reader_and_gets_in_after_its_release(make_client, key, virtual_clock):
    client = make_client(clock=virtual_clock, **PATIENT)
    reader = client.readers_writer(key).acquire_read(timeout=0)
    written: list[object] = []

    def write() -> None:
        try:
            written.append(client.readers_writer(key).acquire_write(timeout=TIMEOUT))
        except LockTimeout as error:  # WouldDeadlock included: asserted below
            written.append(error)

    thread = threading.Thread(target=write)
    virtual_clock.follow(thread)
    thread.start()
    virtual_clock.advance(2 * LEASE)
    assert written == []  # waiting for the reader, whose thread this is not
    reader.release()
    virtual_clock.advance(2 * LEASE)  # its next look at the readers
    thread.join(PATIENCE)
    assert not thread.is_alive()
    assert len(written) == 1
    assert not isinstance(written[0], Exception), written[0]
    assert written[0].is_held()


def test_another_thread_still_waits_for_the_writer_and_reads_after_its_release(make_client, key, virtual_clock):
    client = make_client(clock=virtual_clock, **PATIENT)
    writer = client.readers_writer(key).acquire_write(timeout=0)
    read: list[object] = []

    def read_it() -> None:
        try:
            read.append(client.readers_writer(key).acquire_read(timeout=TIMEOUT))
        except LockTimeout as error:
            read.append(error)

    thread = threading.Thread(target=read_it)
    virtual_clock.follow(thread)
    thread.start()
    virtual_clock.advance(2 * LEASE)
    assert read == []
    writer.release()
    virtual_clock.advance(2 * LEASE)
    thread.join(PATIENCE)
    assert not thread.is_alive()
    assert len(read) == 1
    assert not isinstance(read[0], Exception), read[0]
    assert read[0].is_held()


def test_async_a_task_mixing_read_and_write_is_would_deadlock_and_another_task_waits(
    make_client, dynamodb, key, virtual_clock
):
    client = make_client(dynamodb, clock=virtual_clock, **PATIENT)
    rw = client.readers_writer(key)

    async def main() -> None:
        reader = await rw.aacquire_read(timeout=0)
        counter, started = RequestCounter(dynamodb), virtual_clock.monotonic()
        with pytest.raises(WouldDeadlock, match="release the read"):
            await rw.aacquire_write(timeout=TIMEOUT)
        assert await rw.atry_acquire_write() is None
        assert counter.total == 0
        assert virtual_clock.monotonic() == started
        writing = asyncio.create_task(rw.aacquire_write(timeout=TIMEOUT))  # another task: it waits
        for _ in range(5):
            await asyncio.sleep(0)
        assert not writing.done()
        await reader.arelease()
        writer = await asyncio.wait_for(writing, PATIENCE)
        assert writer.is_held()
        # The write lock is the creating task's, not this one's: this task reads after it, as any other holder.
        assert await rw.atry_acquire_read() is None
        await writer.arelease()

        writer = await rw.aacquire_write(timeout=0)
        counter.reset()
        started = virtual_clock.monotonic()
        with pytest.raises(WouldDeadlock, match="release the write"):
            await rw.aacquire_read(timeout=TIMEOUT)
        assert await rw.atry_acquire_read() is None
        assert counter.total == 0
        assert virtual_clock.monotonic() == started
        reading = asyncio.create_task(rw.aacquire_read(timeout=TIMEOUT))
        for _ in range(5):
            await asyncio.sleep(0)
        assert not reading.done()
        await writer.arelease()
        assert (await asyncio.wait_for(reading, PATIENCE)).is_held()

    asyncio.run(main())
