"""Both clients respect each other's locks: the table format is the AWS Java client's."""

from __future__ import annotations

import re
import threading
import time

import pytest
from botocore.exceptions import ClientError

from dynalock_django.dynamodb import LockTimeout

from ...dynamodb_support import LEASE
from ...java_client import JavaLockClient

pytestmark = pytest.mark.stores

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def raw(dynamodb, table_name, key):
    return dynamodb.get_item(TableName=table_name, Key={"key": {"S": key}}, ConsistentRead=True).get("Item")


def test_our_item_has_the_java_clients_attribute_names_types_and_units(make_client, dynamodb, key):
    client = make_client(dynamodb)
    lease = client.acquire(key, data=b"\x01\x02")
    item = raw(dynamodb, client.table_name, key)
    assert item["key"] == {"S": key}
    assert item["ownerName"] == {"S": client.owner_name}
    assert item["leaseDuration"] == {"S": "1000"}  # milliseconds, in a string
    assert UUID.fullmatch(item["recordVersionNumber"]["S"])
    assert item["data"] == {"B": b"\x01\x02"}
    assert "isReleased" not in item
    # Our additions the Java client carries along untouched: numbers, the clock-bound rule's stamp,
    # the live-locks index's key and the queue of waiters (empty until someone asks).
    assert set(item) - {"key", "ownerName", "leaseDuration", "recordVersionNumber", "data"} == {
        "fencingToken",
        "acquiredAt",
        "renewedAt",
        "sentAt",
        "ttl",
        "liveLockKey",
        "waiters",
    }
    assert item["waiters"] == {"M": {}}
    assert all(set(item[name]) == {"N"} for name in ("fencingToken", "acquiredAt", "renewedAt", "ttl"))
    # The clock-bound rule's stamp names the version it dates.
    assert item["sentAt"] == {"M": {"version": item["recordVersionNumber"], "ms": item["renewedAt"]}}
    assert item["liveLockKey"] == {"S": key}
    lease.release()
    released = raw(dynamodb, client.table_name, key)
    assert released["isReleased"] == {"S": "1"}
    assert "liveLockKey" not in released


def test_a_lock_held_by_the_java_client_is_respected(make_client, dynamodb, table_name, key):
    java = JavaLockClient(dynamodb, table_name, lease_ms=int(LEASE * 1000))
    java.acquire_new(key, data=b"java payload")
    client = make_client()
    assert client.try_acquire(key) is None
    held = client.get(key)
    assert held.owner_name == "java-host-1"
    assert held.lease_duration == LEASE
    assert held.record_version_number == java.rvn
    assert held.data == b"java payload"
    assert held.fencing_token is None
    assert not held.is_malformed


def test_a_heartbeating_java_holder_is_never_taken_over(make_client, dynamodb, table_name, key):
    java = JavaLockClient(dynamodb, table_name, lease_ms=int(LEASE * 1000))
    java.acquire_new(key)
    stop = threading.Event()

    def heartbeats():
        while not stop.wait(LEASE / 4):
            java.heartbeat(key)

    thread = threading.Thread(target=heartbeats)
    thread.start()
    try:
        with pytest.raises(LockTimeout) as caught:
            make_client().acquire(key, timeout=3 * LEASE)
        assert caught.value.holder.owner_name == "java-host-1"
    finally:
        stop.set()
        thread.join()


def test_a_dead_java_holder_is_taken_over_after_its_own_lease(make_client, dynamodb, table_name, key):
    java = JavaLockClient(dynamodb, table_name, lease_ms=int(2 * LEASE * 1000))
    java.acquire_new(key)
    started = time.monotonic()
    lease = make_client().acquire(key, timeout=10 * LEASE)
    assert time.monotonic() - started >= 2 * LEASE
    assert lease.fencing_token > 0
    lease.release()


def test_java_release_by_mark_or_by_delete_frees_the_lock_at_once(make_client, dynamodb, table_name, key):
    java = JavaLockClient(dynamodb, table_name)
    client = make_client()
    for delete in (False, True):
        java.acquire_new(key) if delete else java.acquire_new(key + "-kept")
        target = key if delete else key + "-kept"
        java.release(target, delete=delete)
        lease = client.try_acquire(target)
        assert lease is not None
        lease.release()


def test_the_java_client_cannot_acquire_our_held_lock(make_client, dynamodb, table_name, key):
    client = make_client()
    lease = client.acquire(key)
    java = JavaLockClient(dynamodb, table_name)
    with pytest.raises(ClientError, match="ConditionalCheckFailed"):
        java.acquire_new(key)
    with pytest.raises(ClientError, match="ConditionalCheckFailed"):
        java.acquire_released(key)
    # Java takes over only with the version it saw; our heartbeat has moved on.
    seen = lease.record_version_number
    time.sleep(2 * client.heartbeat_period)
    with pytest.raises(ClientError, match="ConditionalCheckFailed"):
        java.take_over(key, seen)
    lease.release()
    java.acquire_released(key)  # released by us: the Java client may take it
    assert client.get(key).owner_name == "java-host-1"


def test_tokens_keep_increasing_when_the_java_client_rewrites_the_item(make_client, dynamodb, table_name, key):
    client = make_client()
    java = JavaLockClient(dynamodb, table_name)
    with client.lock(key) as first:
        pass
    java.acquire_released(key)  # PutItem replaces the whole item: our token attribute is gone
    assert client.get(key).fencing_token is None
    java.release(key, delete=False)
    with client.lock(key) as second:
        assert second.fencing_token > first.fencing_token
