"""An operator's force release: of the holding they read, never of a later one."""

from __future__ import annotations

import pytest

from dynalock_django.dynamodb import LockNotAcquired

from ...dynamodb_support import LEASE, PATIENCE
from ...java_client import JavaLockClient


def test_force_release_survives_heartbeats_since_the_read(make_client, key):
    holder, operator = make_client(), make_client()
    lease = holder.acquire(key)
    read = operator.get(key)
    lease.extend()  # a heartbeat: new record version, same holding
    assert operator.get(key).record_version_number != read.record_version_number

    released = operator.force_release(read, released_by="alice (support)")

    assert released.is_released
    assert released.released_by == "alice (support)"
    assert released.fencing_token == lease.fencing_token
    assert lease.wait_until_lost(PATIENCE)


def test_force_release_of_a_lock_that_changed_hands_changes_nothing(make_client, key):
    first, second, operator = make_client(), make_client(), make_client()
    first.acquire(key).release()
    read = operator.get(key)
    assert read.is_released
    first_lease = first.acquire(key)
    stale = operator.get(key)
    first_lease.release()
    taken = second.acquire(key)

    with pytest.raises(LockNotAcquired) as caught:
        operator.force_release(stale, released_by="bob")

    assert caught.value.holder.owner_name == second.owner_name
    stored = operator.get(key)
    assert not stored.is_released
    assert stored.fencing_token == taken.fencing_token
    taken.release()


def test_an_old_read_releases_nothing_of_a_later_holding_by_the_same_owner(make_client, key):
    # A client keeps its owner name across release and re-acquire: only the fencing token tells the
    # holding an operator read (an old confirmation page) from the one the same client holds now.
    holder, operator = make_client(), make_client()
    first = holder.acquire(key)
    old = operator.get(key)
    first.release()
    again = holder.acquire(key)
    assert again.owner_name == old.owner_name
    assert again.fencing_token > old.fencing_token

    with pytest.raises(LockNotAcquired):
        operator.force_release(old, released_by="bob")
    with pytest.raises(LockNotAcquired):
        operator.take_over(old, owner_name="bob")

    stored = operator.get(key)
    assert not stored.is_released
    assert stored.released_by is None
    assert (stored.owner_name, stored.fencing_token) == (again.owner_name, again.fencing_token)
    assert again.is_held()
    again.release()


def test_force_release_of_a_lock_its_holder_already_released_is_refused(make_client, key):
    holder, operator = make_client(), make_client()
    lease = holder.acquire(key)
    read = operator.get(key)
    lease.release()

    with pytest.raises(LockNotAcquired):
        operator.force_release(read, released_by="bob")
    assert operator.get(key).released_by is None


def test_force_release_of_a_java_item_without_token_uses_its_version(make_client, dynamodb, table_name, key):
    JavaLockClient(dynamodb, table_name, owner_name="billing-service", lease_ms=int(LEASE * 10_000)).acquire_new(key)
    operator = make_client()
    read = operator.get(key)
    assert read.fencing_token is None

    released = operator.force_release(read, released_by="carol")

    assert released.is_released
