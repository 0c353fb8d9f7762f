"""The write item's mark that readers may hold: a writer reads the readers only when its grant cannot rule them out.

Each race is played in the order that matters, a botocore hook running the other side between
two requests of the first; the item's loss (TTL, a delete, the Java client's whole-item write)
is played by writing the table directly, as those do.
"""

from __future__ import annotations

import pytest

from dynalock_django.dynamodb import LockTimeout
from dynalock_django.dynamodb.wire.readers_mark import READERS_MAY_HOLD

from ...dynamodb_support import LEASE, RequestCounter
from ...java_client import JavaLockClient


def stored(dynamodb, table_name, key):
    return dynamodb.get_item(TableName=table_name, Key={"key": {"S": key}}, ConsistentRead=True).get("Item")


def test_a_writer_on_a_row_no_reader_marked_sends_only_its_grant(make_client, dynamodb, key):
    rw = make_client(dynamodb).readers_writer(key)
    rw.acquire_write(timeout=0).release()  # the item exists now, with a token of ours
    counter = RequestCounter(dynamodb)
    rw.acquire_write(timeout=0).release()
    assert dict(counter.calls) == {"UpdateItem": 2}


def test_a_writer_after_a_reader_reads_the_readers_and_waits_for_them(make_client, dynamodb, key, virtual_clock):
    writer_client = make_client(dynamodb, clock=virtual_clock)
    rw = writer_client.readers_writer(key)
    rw.acquire_write(timeout=0).release()
    reader = make_client(clock=virtual_clock).readers_writer(key).acquire_read(timeout=0)
    counter = RequestCounter(dynamodb)
    with pytest.raises(LockTimeout, match="1 reader"):
        rw.acquire_write(timeout=2 * LEASE)
    assert counter.calls["BatchGetItem"] >= 1
    assert reader.is_held()
    reader.release()
    lease = rw.acquire_write(timeout=0)  # the readers gone, this writer takes the mark off
    lease.release()
    counter.reset()
    rw.acquire_write(timeout=0).release()
    assert dict(counter.calls) == {"UpdateItem": 2}


def test_a_reader_between_its_permit_and_its_mark_gives_the_permit_back_to_a_writer_that_came_in(
    make_client, dynamodb, table_name, key
):
    """The writer's grant finds no mark and does not look; the reader's mark then fails, so it does not stay."""
    reader_client, writer_client = make_client(dynamodb), make_client()
    writer_client.readers_writer(key).acquire_write(timeout=0).release()
    updates, written = [], []

    def writer_between(**_: object) -> None:
        updates.append(1)
        if len(updates) == 2:  # the reader won its permit and is about to mark the write item
            written.append(writer_client.readers_writer(key).acquire_write(timeout=0))

    dynamodb.meta.events.register_first("before-send.dynamodb.UpdateItem", writer_between)
    assert reader_client.readers_writer(key).try_acquire_read() is None
    dynamodb.meta.events.unregister("before-send.dynamodb.UpdateItem", writer_between)
    assert written[0].is_held()
    assert reader_client.held_leases() == []
    assert writer_client.readers_writer(key).readers() == []
    assert READERS_MAY_HOLD not in stored(dynamodb, table_name, key)


def test_a_reader_on_a_row_without_an_item_creates_a_released_lock_item_with_the_mark(
    make_client, dynamodb, table_name, key
):
    client = make_client(dynamodb)
    reader = client.readers_writer(key).acquire_read(timeout=0)
    assert client.get(key).is_released  # a free lock to every client: ours, and the Java client's below
    assert not client.get(key).is_malformed
    assert READERS_MAY_HOLD in stored(dynamodb, table_name, key)
    java = JavaLockClient(dynamodb, table_name)
    java.acquire_released(key)  # a Java writer (who waits for no reader) writes the whole item: no mark, no token
    java.release(key, delete=False)
    assert READERS_MAY_HOLD not in stored(dynamodb, table_name, key)
    with pytest.raises(LockTimeout, match="1 reader"):  # the grant seeds a token: it knows nothing, and looks
        make_client(dynamodb).readers_writer(key).acquire_write(timeout=0.2)  # another client: the reader's waits
    reader.release()


def test_a_writer_that_found_the_item_gone_and_gave_up_leaves_the_mark_for_the_next(
    make_client, dynamodb, table_name, key, virtual_clock
):
    """TTL (or a delete) took the write item while a reader held: the next writers must all still look."""
    writer_client = make_client(clock=virtual_clock)
    reader = make_client(clock=virtual_clock).readers_writer(key).acquire_read(timeout=0)
    dynamodb.delete_item(TableName=table_name, Key={"key": {"S": key}})
    for _ in range(2):  # the first seeds a token and looks; the second finds the mark the first left
        with pytest.raises(LockTimeout, match="1 reader"):
            writer_client.readers_writer(key).acquire_write(timeout=2 * LEASE)
    assert reader.is_held()
    reader.release()
