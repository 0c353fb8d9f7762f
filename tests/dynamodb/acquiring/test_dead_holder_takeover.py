"""Takeover of locks whose holder stopped renewing, decided on the waiter's monotonic clock only.

The rule's timing is unit-tested in test_acquisition.py; here it runs against a real endpoint, on a
fake clock where it can (try_acquire, get and available_in never sleep) and with real time only for
bounds in the safe direction (never taken over before a whole lease).
"""

from __future__ import annotations

import time

import pytest

from dynalock_django.dynamodb import LockTimeout, VirtualClock

from ...dynamodb_support import LEASE, RequestCounter
from ..clocks import TICK


def abandon(client, key):
    """Hold ``key`` and then stop renewing it, as a crashed process would."""
    lease = client.acquire(key)
    client.close(release=False)
    return lease


def test_abandoned_lock_is_taken_over_after_one_lease_not_before(make_client, key):
    dead = abandon(make_client(), key)
    waiter = make_client()
    started = time.monotonic()
    lease = waiter.acquire(key, timeout=5 * LEASE)
    waited = time.monotonic() - started
    # The waiter must see the same version stand for a whole lease on its own clock.
    assert waited >= LEASE
    assert lease.fencing_token > dead.fencing_token
    lease.release()


def test_a_heartbeating_holder_is_never_taken_over(make_client, key, virtual_clock):
    # On the virtual clock, whatever the machine's load: every renewal comes when it falls due.
    holder, waiter = make_client(clock=virtual_clock), make_client(clock=virtual_clock)
    lease = holder.acquire(key)
    with pytest.raises(LockTimeout):
        waiter.acquire(key, timeout=10 * LEASE)  # ten leases: a waiter would have taken a dead holder's long ago
    assert lease.is_held()
    assert holder.get(key).owner_name == holder.owner_name
    lease.release()


def test_repeated_try_acquire_takes_a_dead_lock_after_exactly_one_lease_of_its_clock(make_client, dynamodb, key, store):
    dead = abandon(make_client(), key)
    clock = VirtualClock()
    waiter = make_client(dynamodb, clock=clock)
    counter = RequestCounter(dynamodb)

    assert waiter.try_acquire(key) is None  # first sight of this version
    clock.advance(LEASE - TICK)
    assert waiter.try_acquire(key) is None
    clock.advance(TICK)
    lease = waiter.try_acquire(key)

    assert lease is not None
    assert lease.fencing_token > dead.fencing_token
    # every attempt is exactly one write; reads only where the store does not return the refusing item
    assert counter.calls["UpdateItem"] == 3
    assert counter.calls["GetItem"] == (0 if store.supports("old_item_on_refusal") else 2)
    lease.release()


def test_takeover_waits_for_the_items_own_lease_duration(make_client, key):
    abandon(make_client(lease_duration=2 * LEASE), key)
    clock = VirtualClock()
    waiter = make_client(clock=clock)  # its own lease is LEASE: the item says 2 * LEASE
    assert waiter.try_acquire(key) is None
    clock.advance(2 * LEASE - TICK)
    assert waiter.try_acquire(key) is None
    clock.advance(TICK)
    lease = waiter.try_acquire(key)
    assert lease is not None
    lease.release()


def test_try_acquire_after_get_and_available_in_takes_over_a_dead_holder(make_client, dynamodb, key):
    dead = abandon(make_client(), key)
    clock = VirtualClock()
    waiter = make_client(dynamodb, clock=clock)
    read = waiter.get(key)
    assert waiter.available_in(read) == LEASE
    clock.advance(0.25 * LEASE)
    assert waiter.available_in(read) == 0.75 * LEASE
    assert make_client().available_in(read) == LEASE  # a client that never saw this version waits a whole lease
    clock.advance(0.75 * LEASE)
    assert waiter.available_in(read) == 0
    counter = RequestCounter(dynamodb)

    lease = waiter.try_acquire(key)

    assert lease is not None
    assert dict(counter.calls) == {"UpdateItem": 1}
    assert lease.fencing_token > dead.fencing_token
    lease.release()
    assert waiter.available_in(waiter.get(key)) == 0  # released
    assert waiter.available_in(None) == 0


def test_available_in_restarts_with_every_renewal_of_a_live_holder(make_client, key):
    clock = VirtualClock()
    holder, watcher = make_client(), make_client(clock=clock)
    lease = holder.acquire(key)
    watcher.get(key)
    clock.advance(LEASE)
    lease.extend()  # a renewal since the first read: a new version
    now = watcher.get(key)
    assert watcher.available_in(now) == LEASE
    assert watcher.try_acquire(key) is None
    lease.release()
