"""The clock-bound takeover rule (``max_clock_skew``) against a real endpoint.

The waiter runs on a fake clock set against the stamp the crashed holder really wrote, so the
bound is hit to the tick without sleeping; real time is used only for bounds in the safe direction.
The rule's arithmetic and edges are unit-tested in test_clock_bound_rule.py.
"""

from __future__ import annotations

import time

import pytest

from dynalock_django.dynamodb import LockTimeout, VirtualClock

from ...dynamodb_support import LEASE, RequestCounter
from ...java_client import JavaLockClient
from ..clocks import TICK, OffsetClock

SKEW = 0.5


def crash(client, key, **options):
    """Hold ``key`` and stop renewing it, as a process killed with SIGKILL would; the stamp it left."""
    lease = client.acquire(key, **options)
    client.close(release=False)
    return lease


def stamp_of(make_client, key):
    sent_at = make_client().get(key).sent_at
    assert sent_at is not None
    return sent_at


def assert_taken_by_the_clock_free_rule_only(make_client, dynamodb, key):
    """However old the holder's last write looks, the lock is taken a whole lease after first sight, not before."""
    clock = VirtualClock(wall=time.time() + 3600.0)
    waiter = make_client(dynamodb, clock=clock, max_clock_skew=SKEW)
    assert waiter.try_acquire(key) is None
    clock.advance(LEASE - TICK)
    assert waiter.try_acquire(key) is None
    clock.advance(TICK)
    assert waiter.try_acquire(key) is not None


def refused_then_taken(store):
    """The requests of a takeover at once: the refused write (and its read, where needed), then the takeover."""
    costs = store.refused_update_costs
    return {**costs, "UpdateItem": costs["UpdateItem"] + 1}


def test_a_crashed_holders_lock_is_taken_at_once_when_its_last_write_is_old_enough(make_client, dynamodb, key, store):
    dead = crash(make_client(), key)
    clock = VirtualClock(wall=stamp_of(make_client, key) + LEASE + SKEW)
    waiter = make_client(dynamodb, clock=clock, max_clock_skew=SKEW)
    counter = RequestCounter(dynamodb)

    lease = waiter.try_acquire(key)

    assert lease is not None
    assert lease.fencing_token > dead.fencing_token
    # The refused write brought the item (or, where a store ignores ALL_OLD, a read did), the second took it over.
    assert dict(counter.calls) == refused_then_taken(store)
    lease.release()


def test_acquire_takes_it_over_without_waiting_too(make_client, dynamodb, key, store):
    dead = crash(make_client(), key)
    # A waiter arriving two leases later: a wall clock ahead by two leases, on real time.
    waiter = make_client(dynamodb, clock=OffsetClock(2 * LEASE), max_clock_skew=SKEW)
    counter = RequestCounter(dynamodb)

    lease = waiter.acquire(key, timeout=5 * LEASE)

    assert lease.fencing_token > dead.fencing_token
    # The refused write, then the takeover: no poll and no wait.
    assert dict(counter.calls) == refused_then_taken(store)
    lease.release()


def test_not_a_tick_before_its_bound(make_client, dynamodb, key):
    crash(make_client(), key)
    clock = VirtualClock(wall=stamp_of(make_client, key) + LEASE + SKEW - 0.25)
    waiter = make_client(dynamodb, clock=clock, max_clock_skew=SKEW)
    assert waiter.try_acquire(key) is None
    assert waiter.available_in(waiter.get(key)) == 0.25
    clock.advance(0.25 - TICK)
    assert waiter.try_acquire(key) is None
    clock.advance(TICK)
    assert waiter.try_acquire(key) is not None


def test_a_crashed_tabs_detached_lock_frees_by_the_same_rule(make_client, dynamodb, key):
    # The admin's edit locks: detached, renewed through whichever server answers the tab.
    holder = make_client()
    tab = holder.acquire(key, owner_name="user:1/tab:a", lease_duration=4 * LEASE, keep_alive=False)
    holder.lease(key, owner_name="user:1/tab:a", fencing_token=tab.fencing_token).extend(4 * LEASE)
    clock = VirtualClock(wall=stamp_of(make_client, key) + 4 * LEASE + SKEW)
    editor = make_client(dynamodb, clock=clock, max_clock_skew=SKEW)
    assert editor.available_in(editor.get(key)) == 0
    # As the admin opens a page: acquire without waiting.
    lease = editor.acquire(key, timeout=0, owner_name="user:2/tab:b", lease_duration=4 * LEASE, keep_alive=False)
    assert lease.fencing_token > tab.fencing_token


def test_a_java_clients_lock_has_no_stamp_and_keeps_the_clock_free_rule(make_client, dynamodb, table_name, key):
    JavaLockClient(dynamodb, table_name, lease_ms=int(LEASE * 1000)).acquire_new(key)
    assert_taken_by_the_clock_free_rule_only(make_client, dynamodb, key)


def test_a_stamp_left_behind_by_a_write_that_changed_the_version_only_is_ignored(
    make_client, dynamodb, table_name, key
):
    holder = make_client()
    lease = crash(holder, key)
    # The Java client's heartbeat sets leaseDuration and the version, and leaves our attributes as they were.
    java = JavaLockClient(dynamodb, table_name, owner_name=holder.owner_name, lease_ms=int(LEASE * 1000))
    java.rvn = lease.record_version_number
    java.heartbeat(key)
    assert make_client().get(key).sent_at is None

    assert_taken_by_the_clock_free_rule_only(make_client, dynamodb, key)


def test_a_heartbeating_holder_is_never_taken_over_even_with_no_skew_allowed(make_client, key, virtual_clock):
    # One clock for both: they agree exactly.
    holder, waiter = make_client(clock=virtual_clock), make_client(clock=virtual_clock, max_clock_skew=0.0)
    lease = holder.acquire(key)
    with pytest.raises(LockTimeout):
        waiter.acquire(key, timeout=10 * LEASE)
    assert lease.is_held()
    lease.release()


def test_in_real_time_the_takeover_comes_no_sooner_than_a_lease_after_the_holders_last_write(make_client, key):
    crash(make_client(), key)
    sent_at = stamp_of(make_client, key)
    lease = make_client(max_clock_skew=SKEW).acquire(key, timeout=5 * LEASE)
    assert time.time() - sent_at >= LEASE
    lease.release()
