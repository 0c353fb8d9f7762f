"""Release: only ever our own lock, and what a with-block reports."""

from __future__ import annotations

import gc
import itertools
import threading
import time
import weakref

import pytest

from dynalock_django.dynamodb import DynamoDBUnavailable, LockLost, VirtualClock
from dynalock_django.dynamodb.leases.lease import record_of
from dynalock_django.dynamodb.leases.lease_record import RAN_OUT

from ...dynamodb_support import LEASE, PATIENCE, FaultInjector, RequestCounter

pytestmark = pytest.mark.stores


def test_releasing_a_lock_someone_else_took_raises_and_leaves_it_alone(make_client, key):
    client, other = make_client(), make_client()
    lease = client.acquire(key)
    client.close(release=False)  # our heartbeat stops; the lock will be taken over
    taken = other.acquire(key, timeout=5 * LEASE)
    with pytest.raises(LockLost) as caught:
        client.release(lease)
    assert caught.value.current.owner_name == other.owner_name
    stored = other.get(key)
    assert stored.record_version_number == taken.record_version_number
    assert not stored.is_released
    taken.release()


def test_best_effort_release_of_a_lost_lease_returns_false(make_client, key):
    client, other = make_client(), make_client()
    lease = client.acquire(key)
    client.close(release=False)
    taken = other.acquire(key, timeout=5 * LEASE)
    assert lease.release(best_effort=True) is False
    assert other.get(key).record_version_number == taken.record_version_number
    taken.release()


def test_releasing_twice_is_a_no_op(make_client, dynamodb, key):
    client = make_client(dynamodb)
    lease = client.acquire(key)
    assert lease.release() is True
    counter = RequestCounter(dynamodb)
    assert lease.release() is False
    assert counter.total == 0


def test_delete_on_release_removes_the_item(make_client, key):
    client = make_client(delete_on_release=True)
    lease = client.acquire(key)
    assert lease.release() is True
    assert client.get(key) is None


def test_fencing_tokens_rise_across_delete_on_release_and_a_ttl_deletion_of_the_item(
    make_client, dynamodb, table_name, key
):
    # Whoever deletes the item (delete_on_release, or DynamoDB's TTL days later), the next grant
    # starts on a fresh item: its token must still be above every token issued for the key before.
    # The clock moves a second between grants, as grants of one key are paced in practice.
    clock = VirtualClock(wall=time.time())
    keeping, deleting = make_client(clock=clock), make_client(clock=clock, delete_on_release=True)
    tokens = []

    def grant(client):
        clock.advance(1.0)
        lease = client.acquire(key, keep_alive=False)
        tokens.append(lease.fencing_token)
        return lease

    grant(keeping).release()
    grant(keeping).release()  # kept, marked released: the token counts on from the item
    grant(deleting).release()  # deleted with the release
    assert keeping.get(key) is None
    grant(keeping).release()
    grant(keeping).release()
    dynamodb.delete_item(TableName=table_name, Key={"key": {"S": key}})  # as TTL deletes a released item
    grant(deleting).release()
    grant(keeping).release()

    assert all(earlier < later for earlier, later in itertools.pairwise(tokens)), tokens


def test_with_block_exception_is_never_swallowed_even_if_release_fails(make_client, key):
    client, operator = make_client(), make_client()

    def body_that_fails_after_losing_the_lock():
        with client.lock(key) as lease:
            operator.force_release(operator.get(key), released_by="test")
            assert lease.wait_until_lost(PATIENCE)
            raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError) as caught:
        body_that_fails_after_losing_the_lock()
    assert any("releasing" in note for note in caught.value.__notes__)


def test_with_block_that_lost_its_lock_raises_lock_lost_at_the_end(make_client, key):
    client, operator = make_client(), make_client()

    def body_that_loses_the_lock():
        with client.lock(key) as lease:
            operator.force_release(operator.get(key), released_by="test")
            assert lease.wait_until_lost(PATIENCE)

    with pytest.raises(LockLost):
        body_that_loses_the_lock()


def heartbeat_threads() -> set[threading.Thread]:
    return {thread for thread in threading.enumerate() if thread.name.startswith("dynalock-heartbeat-")}


def test_close_releases_held_leases_and_stops_the_heartbeat(make_client, key):
    client = make_client()
    before = heartbeat_threads()
    leases = [client.acquire(f"{key}-{i}") for i in range(3)]
    started = heartbeat_threads() - before
    # One heartbeat schedules all of a client's leases; a loaded machine's slow acquires may already have
    # started one of its renewal workers too (a renewal came due meanwhile): close stops those as well.
    assert len([thread for thread in started if "-renewal-" not in thread.name]) == 1
    client.close()
    assert not any(thread.is_alive() for thread in started)
    for lease in leases:
        assert not lease.is_held()
        assert client.get(lease.key).is_released


def test_release_after_safe_time_ran_out_but_nobody_took_it_succeeds(make_client, dynamodb, key):
    client = make_client(dynamodb)
    lease = client.acquire(key)
    with record_of(lease).write_lock:  # the heartbeat cannot renew it: as if the process were stopped
        time.sleep(LEASE + 0.1)
    assert not lease.is_held()
    assert lease.release() is True
    assert client.get(key).is_released


def test_a_release_that_cannot_write_a_lease_that_ran_out_reports_it_lost(make_client, dynamodb, key):
    # A stopped process resumes: its release may run before the heartbeat sees the lease ran out. The
    # release cannot tell whether anyone held the lock since, so whoever waits for a loss must hear of it.
    client = make_client(dynamodb)
    lease = client.acquire(key)
    told = []
    lease.add_lost_callback(told.append)
    with record_of(lease).write_lock:  # neither a renewal nor the heartbeat's expiry can run meanwhile
        time.sleep(LEASE + 0.1)
        FaultInjector(dynamodb).fail("UpdateItem", times=10)
        with pytest.raises(DynamoDBUnavailable):
            lease.release()
    assert told == [lease]
    assert lease.lost_reason == RAN_OUT


def test_release_callbacks_run_once_however_the_lease_is_released(make_client, key):
    client = make_client()
    told: list[int] = []
    with client.lock(key) as lease:
        lease.add_release_callback(lambda released: told.append(released.fencing_token))
        assert told == []
    lease.release()  # a second release is a no-op and tells nobody
    assert told == [lease.fencing_token]


def test_a_released_lease_is_freed_at_once_without_the_garbage_collector(make_client, key):
    """What a grant makes (its record, the reentrancy's callback bound to it) forms no cycle once released: a
    process taking locks in a loop leaves the collector nothing of theirs to find."""
    client = make_client()
    client.acquire(key).release()  # the first grant starts the heartbeat: not this test's
    lease = client.acquire(key, on_lost=lambda lost: None)
    lease.add_release_callback(lambda released: None)
    record = weakref.ref(record_of(lease))
    gc.disable()
    try:
        lease.release()
        del lease
        assert record() is None
    finally:
        gc.enable()
