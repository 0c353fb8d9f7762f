"""Items we cannot read are held by an unknown owner, with a safe default lease."""

from __future__ import annotations

import time

import pytest

from dynalock_django.dynamodb import LockTimeout
from dynalock_django.dynamodb.clock import SystemClock
from dynalock_django.dynamodb.wire.item import MALFORMED_ITEM_LEASE_SECONDS

pytestmark = pytest.mark.stores

GOOD = {
    "ownerName": {"S": "someone"},
    "leaseDuration": {"S": "1000"},
    "recordVersionNumber": {"S": "v1"},
}

MALFORMED = {
    "missing leaseDuration": {k: v for k, v in GOOD.items() if k != "leaseDuration"},
    "non-numeric leaseDuration": {**GOOD, "leaseDuration": {"S": "20s"}},
    "leaseDuration as a number": {**GOOD, "leaseDuration": {"N": "1000"}},
    "ownerName as a number": {**GOOD, "ownerName": {"N": "7"}},
    "missing version": {k: v for k, v in GOOD.items() if k != "recordVersionNumber"},
    "version as a number": {**GOOD, "recordVersionNumber": {"N": "3"}},
    "data as a string": {**GOOD, "data": {"S": "not binary"}},
    "isReleased not 1": {**GOOD, "isReleased": {"S": "yes"}},
    "non-numeric token": {**GOOD, "fencingToken": {"S": "seven"}},
}


class SkewedClock(SystemClock):
    """Our monotonic clock, jumped forward on demand (to skip long default leases)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def monotonic(self) -> float:
        return super().monotonic() + self.offset


def put(dynamodb, table_name, key, attributes):
    dynamodb.put_item(TableName=table_name, Item={"key": {"S": key}, **attributes})


@pytest.mark.parametrize("problem", MALFORMED)
def test_a_malformed_item_is_read_never_crashes_and_is_held(make_client, dynamodb, own_table, key, problem):
    put(dynamodb, own_table, key, MALFORMED[problem])
    client = make_client(table=own_table)  # scanned whole below
    info = client.get(key)
    assert info.is_malformed
    assert info.lease_duration == MALFORMED_ITEM_LEASE_SECONDS
    assert client.try_acquire(key) is None
    with pytest.raises(LockTimeout, match="unreadable item"):
        client.acquire(key, timeout=0.3)
    assert any(info.key == key and info.is_malformed for info in client.scan())


@pytest.mark.parametrize("problem", ["non-numeric leaseDuration", "missing version", "non-numeric token"])
def test_a_malformed_item_is_taken_over_only_after_the_default_lease(make_client, dynamodb, table_name, key, problem):
    put(dynamodb, table_name, key, MALFORMED[problem])
    clock = SkewedClock()
    client = make_client(clock=clock)
    assert client.try_acquire(key) is None  # first sight starts the clock
    clock.offset = MALFORMED_ITEM_LEASE_SECONDS - 1
    assert client.try_acquire(key) is None
    clock.offset = MALFORMED_ITEM_LEASE_SECONDS + 0.01
    lease = client.try_acquire(key)
    assert lease is not None
    stored = client.get(key)
    assert not stored.is_malformed
    assert stored.fencing_token == lease.fencing_token
    lease.release()


def test_a_released_item_with_a_garbage_token_is_free_and_gets_a_fresh_token(make_client, dynamodb, table_name, key):
    put(dynamodb, table_name, key, {**GOOD, "isReleased": {"S": "1"}, "fencingToken": {"S": "seven"}})
    client = make_client()
    lease = client.acquire(key, timeout=1)
    assert lease.fencing_token >= int(time.time() * 1000) - 60_000  # seeded from the wall clock
    assert client.get(key).fencing_token == lease.fencing_token
    lease.release()
