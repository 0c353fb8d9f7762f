"""Readers-writer locks: readers share, a writer excludes them, and a waiting writer keeps new readers out.

On the in-process store and the virtual clock; the races between a reader and a writer are
played in the one order that matters, with a botocore hook running the other side between two
requests of the first.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from dynalock_django.dynamodb import InvalidLockRequest, LockTimeout

from ...dynamodb_support import LEASE, REFRESH, RequestCounter
from ..clocks import TICK


def test_readers_share_and_a_writer_excludes_them(make_client, key, virtual_clock):
    a, b, w = (make_client(clock=virtual_clock) for _ in range(3))
    first = a.readers_writer(key).acquire_read(timeout=0)
    second = b.readers_writer(key).acquire_read(timeout=0)
    assert first.permit != second.permit
    with pytest.raises(LockTimeout, match="2 reader") as timed_out:
        w.readers_writer(key).acquire_write(timeout=2 * LEASE)
    assert {holder.owner_name for holder in timed_out.value.holders} == {a.owner_name, b.owner_name}
    assert w.get(key).is_released  # the write item given back at the time-out
    assert first.is_held()
    assert second.is_held()
    first.release()
    second.release()
    writer = w.readers_writer(key).acquire_write(timeout=0)
    with pytest.raises(LockTimeout, match="a writer holds"):
        a.readers_writer(key).acquire_read(timeout=2 * LEASE)
    assert a.readers_writer(key).try_acquire_read() is None
    writer.release()
    assert a.readers_writer(key).acquire_read(timeout=0).permit is not None


def test_the_writers_token_grows_from_writer_to_writer_and_is_the_plain_locks(make_client, key):
    a, b = make_client(), make_client()
    tokens = []
    for client in (a, b, a):
        lease = client.readers_writer(key).acquire_write(timeout=0)
        tokens.append(lease.fencing_token)
        assert lease.permit is None
        assert a.get(key).fencing_token == lease.fencing_token  # the write item is the plain lock of the name
        lease.release()
    assert tokens == sorted(set(tokens))


def test_a_writer_that_comes_in_between_a_readers_read_and_its_write_makes_it_give_the_permit_back(
    make_client, dynamodb, key
):
    reader_client, writer_client = make_client(dynamodb), make_client()
    written = []

    def writer_first(**_: object) -> None:
        if not written:  # the reader has read the set (no writer) and is about to write its permit
            written.append(writer_client.readers_writer(key).acquire_write(timeout=0))  # finds no reader yet

    dynamodb.meta.events.register_first("before-send.dynamodb.UpdateItem", writer_first)
    assert reader_client.readers_writer(key).try_acquire_read() is None  # its check of the write item saw the writer
    dynamodb.meta.events.unregister("before-send.dynamodb.UpdateItem", writer_first)
    assert written[0].is_held()
    assert reader_client.held_leases() == []
    assert writer_client.readers_writer(key).readers() == []  # the permit was given back


def test_a_reader_that_wrote_first_is_waited_for_by_the_writer(make_client, dynamodb, key, virtual_clock):
    reader_client, writer_client = make_client(clock=virtual_clock), make_client(dynamodb, clock=virtual_clock)
    read = []

    def reader_first(**_: object) -> None:
        if not read:  # the writer holds its item and is about to read the readers: a reader got in just before
            read.append(reader_client.readers_writer(key).acquire_read(timeout=0))

    dynamodb.meta.events.register_first("before-send.dynamodb.UpdateItem", reader_first)
    with pytest.raises(LockTimeout, match="1 reader"):
        writer_client.readers_writer(key).acquire_write(timeout=2 * LEASE)
    assert read[0].is_held()


def test_a_waiting_writer_is_not_starved_by_a_stream_of_readers(make_client, key, virtual_clock):
    """The bound of docs/guarantees.md: the readers in place leave, then the writer is in within one poll."""
    rw = [make_client(clock=virtual_clock).readers_writer(key) for _ in range(6)]
    in_place = [rw[0].acquire_read(timeout=0), rw[1].acquire_read(timeout=0)]
    writer_in: list[float] = []

    def write() -> None:
        lease = rw[5].acquire_write(timeout=60 * LEASE)
        writer_in.append(virtual_clock.monotonic())
        lease.release()

    thread = threading.Thread(target=write)
    virtual_clock.follow(thread)
    thread.start()
    virtual_clock.advance(REFRESH)  # the writer holds the write item and waits for the two readers
    for arriving in rw[2:5] * 3:  # readers keep arriving while the writer waits: none gets in
        assert arriving.try_acquire_read() is None
        virtual_clock.advance(REFRESH)
    in_place[0].release()
    virtual_clock.advance(REFRESH)
    assert writer_in == []
    in_place[1].release()
    last_left = virtual_clock.monotonic()
    virtual_clock.advance(2 * REFRESH)
    thread.join(5)
    assert writer_in
    assert writer_in[0] - last_left <= REFRESH + TICK


def test_a_reader_kept_out_by_a_writer_writes_nothing(make_client, dynamodb, key):
    """Readers arriving while a writer is in cost one read each, and never hold a permit in its way."""
    make_client().readers_writer(key).acquire_write(timeout=0)
    rw = make_client(dynamodb).readers_writer(key)
    counter = RequestCounter(dynamodb)
    assert rw.try_acquire_read() is None
    assert dict(counter.calls) == {"BatchGetItem": 1}


def test_a_dead_readers_permit_stops_counting_after_exactly_one_lease(make_client, key, virtual_clock):
    reader, writer = make_client(clock=virtual_clock), make_client(clock=virtual_clock)
    reader.readers_writer(key).acquire_read(timeout=0)
    reader.close(release=False)  # a crashed reader: its permit stays, unrenewed
    started = virtual_clock.monotonic()
    lease = writer.readers_writer(key).acquire_write(timeout=5 * LEASE)
    waited = virtual_clock.monotonic() - started
    assert LEASE <= waited <= LEASE + REFRESH
    lease.release()


def test_a_dead_writers_item_keeps_readers_out_for_exactly_one_lease(make_client, key, virtual_clock):
    writer, reader = make_client(clock=virtual_clock), make_client(clock=virtual_clock)
    writer.readers_writer(key).acquire_write(timeout=0)
    writer.close(release=False)
    rw = reader.readers_writer(key)
    assert rw.try_acquire_read() is None  # first sight of the writer's version
    virtual_clock.advance(LEASE - TICK)
    assert rw.try_acquire_read() is None
    virtual_clock.advance(TICK)
    assert rw.try_acquire_read() is not None


def test_request_counts(make_client, dynamodb, key):
    """docs/protocol.md's table: a reader 3 requests; a writer after readers 3 (it reads them and takes the
    mark off), a writer after that 1; a release 1. A lease no heartbeat renews within the test: a loaded machine's
    slow test would count a renewal among them."""
    rw = make_client(dynamodb, lease_duration=60, heartbeat_period=20).readers_writer(key)
    counter = RequestCounter(dynamodb)
    reader = rw.acquire_read(timeout=1)
    assert dict(counter.calls) == {"BatchGetItem": 1, "UpdateItem": 2}  # the permit, then the mark
    counter.reset()
    reader.release()
    assert dict(counter.calls) == {"UpdateItem": 1}
    counter.reset()
    writer = rw.acquire_write(timeout=1)
    assert dict(counter.calls) == {"UpdateItem": 2, "BatchGetItem": 1}  # the grant, the readers, the mark off
    counter.reset()
    writer.release()
    assert dict(counter.calls) == {"UpdateItem": 1}
    counter.reset()
    rw.acquire_write(timeout=1).release()
    assert dict(counter.calls) == {"UpdateItem": 2}  # no mark: no reader can be in


def test_async_readers_and_writer(make_client, key, virtual_clock):
    a, w = make_client(clock=virtual_clock), make_client(clock=virtual_clock)

    async def main() -> None:
        reader = await a.readers_writer(key).aacquire_read(timeout=0)
        with pytest.raises(LockTimeout):
            await w.readers_writer(key).aacquire_write(timeout=2 * LEASE)
        assert w.get(key).is_released
        await reader.arelease()
        writer = await w.readers_writer(key).aacquire_write(timeout=2 * LEASE)
        with pytest.raises(LockTimeout):
            await a.readers_writer(key).aacquire_read(timeout=2 * LEASE)
        await writer.arelease()

    asyncio.run(main())


def test_the_reader_limit_is_a_count_of_the_set(make_client, key):
    client = make_client()
    rw = client.readers_writer(key, max_readers=2)
    leases = [rw.acquire_read(timeout=0), rw.acquire_read(timeout=0)]
    assert rw.try_acquire_read() is None  # two readers at most
    assert sorted(holder.permit for holder in rw.readers()) == [0, 1]
    with pytest.raises(Exception, match=r"has 2 permits .* asks for 32"):
        client.readers_writer(key).try_acquire_read()
    for lease in leases:
        lease.release()


def test_a_writer_with_fewer_readers_is_refused_while_readers_of_more_hold_and_never_clears_their_mark(
    make_client, key, virtual_clock
):
    """8 readers of max_readers=8 in, 2 gone: a writer of max_readers=2 is refused, the right one waits for the 6."""
    readers = [make_client(clock=virtual_clock).readers_writer(key, max_readers=8) for _ in range(8)]
    leases = sorted((rw.acquire_read(timeout=0) for rw in readers), key=lambda lease: lease.permit)
    for lease in leases[:2]:  # the first two permits let go: a set of 2 reads only released permits of its own
        lease.release()
    holding = leases[2:]
    smaller, right = make_client(clock=virtual_clock), make_client(clock=virtual_clock)
    for _ in range(2):  # refused each time: the first refusal left the mark for the next writer
        with pytest.raises(InvalidLockRequest, match=r"has 8 permits .*held.* asks for 2"):
            smaller.readers_writer(key, max_readers=2).acquire_write(timeout=2 * LEASE)
        assert smaller.get(key).is_released  # the write item given back
    with pytest.raises(LockTimeout, match="6 reader"):
        right.readers_writer(key, max_readers=8).acquire_write(timeout=2 * LEASE)
    assert all(lease.is_held() for lease in holding)
    for lease in holding:
        lease.release()
    right.readers_writer(key, max_readers=8).acquire_write(timeout=0).release()


def test_a_writer_reads_the_readers_of_the_count_stored_with_the_mark(make_client, key, virtual_clock):
    """A reader of a larger set holding only a permit past the smaller set's key past its last: still seen."""
    reader = make_client(clock=virtual_clock).readers_writer(key, max_readers=8)
    leases = [reader.acquire_read(timeout=0) for _ in range(8)]
    for lease in leases:
        if lease.permit != 6:
            lease.release()
    writer = make_client(clock=virtual_clock)
    with pytest.raises(InvalidLockRequest, match=r"has 8 permits .*#reader-6"):
        writer.readers_writer(key, max_readers=2).acquire_write(timeout=0)
