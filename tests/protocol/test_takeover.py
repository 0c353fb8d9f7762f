"""Takeover of abandoned locks, decided on the waiter's monotonic clock only."""

from __future__ import annotations

import time

import pytest

from dynalock_django.dynamodb import LockTimeout

from ..dynamodb_support import LEASE, RequestCounter


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
    assert waited < LEASE + waiter.refresh_period + 0.5
    assert lease.fencing_token > dead.fencing_token
    lease.release()


def test_a_heartbeating_holder_is_never_taken_over(make_client, key):
    holder, waiter = make_client(), make_client()
    lease = holder.acquire(key)
    with pytest.raises(LockTimeout):
        waiter.acquire(key, timeout=4 * LEASE)
    assert lease.is_held()
    assert holder.get(key).owner_name == holder.owner_name
    lease.release()


def test_repeated_try_acquire_takes_a_dead_lock_after_one_lease(make_client, dynamodb, key, store):
    abandon(make_client(), key)
    waiter = make_client(dynamodb)
    counter = RequestCounter(dynamodb)
    started = time.monotonic()
    lease = None
    while lease is None and time.monotonic() - started < 5 * LEASE:
        lease = waiter.try_acquire(key)
        if lease is None:
            time.sleep(0.05)
    waited = time.monotonic() - started
    assert lease is not None
    assert LEASE <= waited < LEASE + 0.5
    # every attempt is exactly one request (where the store returns the item), no reads
    refused = counter.calls["UpdateItem"] - 1
    assert counter.calls["GetItem"] == (0 if store.supports("old_item_on_refusal") else refused)
    lease.release()


def test_takeover_uses_the_items_own_lease_duration(make_client, key):
    dead = make_client(lease_duration=2 * LEASE)
    abandon(dead, key)
    waiter = make_client()  # its own lease is LEASE: the item says 2 * LEASE
    started = time.monotonic()
    lease = waiter.acquire(key, timeout=10 * LEASE)
    assert time.monotonic() - started >= 2 * LEASE
    lease.release()


def test_observation_cache_is_bounded(make_client):
    holder, waiter = make_client(), make_client()
    waiter._observations._max_size = 5
    leases = [holder.acquire(f"bounded-{i}-{time.monotonic_ns()}") for i in range(8)]
    for lease in leases:
        assert waiter.try_acquire(lease.key) is None
    assert len(waiter._observations) == 5
    for lease in leases:
        lease.release()


def test_try_acquire_after_get_and_available_in_takes_over_a_dead_holder(make_client, dynamodb, key):
    dead = abandon(make_client(), key)
    waiter = make_client(dynamodb)
    read = waiter.get(key)
    wait = waiter.available_in(read)
    assert 0 < wait <= LEASE
    assert make_client().available_in(read) == LEASE  # a client that never saw this version waits a whole lease
    time.sleep(wait)
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
    holder, watcher = make_client(), make_client()
    lease = holder.acquire(key)
    watcher.get(key)
    time.sleep(LEASE)
    now = watcher.get(key)  # a new version, written by a heartbeat since the first read
    assert watcher.available_in(now) > LEASE - 2 * watcher.heartbeat_period
    assert watcher.try_acquire(key) is None
    lease.release()
