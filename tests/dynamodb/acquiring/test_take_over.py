"""take_over: a user or operator takes the holding they read, in one write, never a later one."""

from __future__ import annotations

import logging

import pytest

from dynalock_django.dynamodb import LockNotAcquired

from ...dynamodb_support import LEASE, PATIENCE, RequestCounter, without_old_item_on_refusal
from ...java_client import JavaLockClient
from ..wire.test_malformed_items import GOOD, put

PATIENT_LEASE = 60.0


def test_take_over_of_the_read_holding_survives_heartbeats_and_issues_a_greater_token(
    make_client, dynamodb, key, caplog
):
    # Leases no loaded machine's pause runs out (the taken 1 s one did, before is_held()): what is asserted is the
    # take-over, not renewal. The old holder's heartbeat stays short (it is how it hears of the take-over); the
    # taker's is rare, so no renewal of the taken lease lands among its counted requests.
    holder = make_client(lease_duration=PATIENT_LEASE)
    taker = make_client(dynamodb, lease_duration=PATIENT_LEASE, heartbeat_period=PATIENT_LEASE / 3)
    lease = holder.acquire(key, data=b"old")
    read = taker.get(key)
    lease.extend()  # a heartbeat since the read: new record version, same holding
    counter = RequestCounter(dynamodb)

    with caplog.at_level(logging.INFO, logger="dynalock_django.acquire"):
        taken = taker.take_over(read, owner_name="support:alice", data=b"new")

    assert dict(counter.calls) == {"UpdateItem": 1}
    assert taken.fencing_token > lease.fencing_token
    assert taken.is_held()
    assert taken in taker.held_leases()
    stored = taker.get(key)
    assert (stored.owner_name, stored.fencing_token, stored.data) == ("support:alice", taken.fencing_token, b"new")
    assert stored.record_version_number == taken.record_version_number
    assert not stored.is_released
    assert f"Lock {key!r} held by {holder.owner_name!r} was taken over by 'support:alice'" in caplog.messages
    # The old holder hears it at its next heartbeat.
    assert lease.wait_until_lost(PATIENCE)
    assert "was taken over by 'support:alice'" in lease.lost_reason
    assert lease.lost_to.owner_name == "support:alice"
    taken.release()


def test_take_over_without_data_removes_the_holders_data(make_client, key):
    holder, taker = make_client(), make_client()
    holder.acquire(key, data=b"old")
    taker.take_over(taker.get(key))
    assert taker.get(key).data is None


def holding_released_since(first, second, key):
    lease = first.acquire(key)
    read = first.get(key)
    lease.release()
    return read


def holding_that_changed_hands(first, second, key):
    lease = first.acquire(key)
    read = first.get(key)
    lease.release()
    second.acquire(key)
    return read


@pytest.mark.parametrize("stale_read", [holding_released_since, holding_that_changed_hands])
@pytest.mark.parametrize("old_item_returned", [True, False])
def test_take_over_of_a_stale_read_changes_nothing(make_client, dynamodb, key, stale_read, old_item_returned, store):
    first, second, taker = make_client(), make_client(), make_client(dynamodb)
    read = stale_read(first, second, key)
    before = taker.get(key)
    counter = RequestCounter(dynamodb)

    with pytest.raises(LockNotAcquired, match="changed since it was read") as caught:
        if old_item_returned:
            taker.take_over(read)
        else:
            with without_old_item_on_refusal(dynamodb):
                taker.take_over(read)

    assert dict(counter.calls) == (store.refused_update_costs if old_item_returned else {"UpdateItem": 1, "GetItem": 1})
    assert holding(caught.value.holder) == holding(before)
    assert holding(taker.get(key)) == holding(before)  # heartbeats aside, nothing changed
    assert taker.held_leases() == []


def holding(lock):
    return (lock.owner_name, lock.fencing_token, lock.is_released, lock.released_by, lock.data)


def test_take_over_of_a_java_item_without_token(make_client, dynamodb, table_name, key):
    java = JavaLockClient(dynamodb, table_name, owner_name="billing-service", lease_ms=int(LEASE * 10_000))
    java.acquire_new(key)
    taker = make_client()
    read = taker.get(key)
    assert read.fencing_token is None

    taken = taker.take_over(read)

    stored = taker.get(key)
    assert (stored.owner_name, stored.fencing_token) == (taker.owner_name, taken.fencing_token)
    assert taken.fencing_token > 0
    with pytest.raises(Exception, match="ConditionalCheckFailed"):
        java.heartbeat(key)  # the Java holder finds out at its next heartbeat
    taken.release()


def test_take_over_of_an_item_whose_token_is_not_a_number_overwrites_it(make_client, dynamodb, table_name, key):
    put(dynamodb, table_name, key, {**GOOD, "fencingToken": {"S": "seven"}})
    taker = make_client()
    read = taker.get(key)
    assert read.bad_fencing_token

    taken = taker.take_over(read)

    stored = taker.get(key)
    assert stored.fencing_token == taken.fencing_token > 0
    assert not stored.is_malformed
    taken.release()


def test_take_over_for_a_browser_tab_gives_a_detached_lease(make_client, key):
    holder, taker = make_client(), make_client()
    holder.acquire(key)
    taken = taker.take_over(taker.get(key), owner_name="tab", lease_duration=3 * LEASE, keep_alive=False)
    assert not taken.keep_alive
    assert taker.held_leases() == []
    stored = taker.get(key)
    assert (stored.owner_name, stored.lease_duration) == ("tab", 3 * LEASE)
    handle = holder.lease(key, owner_name="tab", fencing_token=taken.fencing_token)
    handle.extend()
    assert handle.release() is True


def test_taking_over_a_lock_this_client_holds_ends_its_old_lease_at_once(make_client, key, virtual_clock):
    # On the virtual clock: the old lease cannot run out on its own first, however loaded the machine.
    client = make_client(clock=virtual_clock)
    old = client.acquire(key)
    new = client.take_over(client.get(key))
    assert old.wait_until_lost(0)
    assert old.lost_to.fencing_token == new.fencing_token
    assert client.held_leases() == [new]
    new.release()
