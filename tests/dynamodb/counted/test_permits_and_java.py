"""A permit is a lock item in the Java client's format: the Java client reads it as a lock; its locks hold permits."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from dynalock_django.dynamodb import InvalidLockRequest

from ...dynamodb_support import LEASE
from ...java_client import JavaLockClient


def raw(dynamodb, table_name, key):
    return dynamodb.get_item(TableName=table_name, Key={"key": {"S": key}}, ConsistentRead=True).get("Item")


def test_the_java_client_reads_a_held_permit_as_a_held_lock(make_client, dynamodb, table_name, key):
    client = make_client(dynamodb)
    lease = client.semaphore(key, 2).acquire(timeout=0)
    permit_key = f"{key}#permit-{lease.permit}"
    item = raw(dynamodb, table_name, permit_key)
    # The Java client's attributes, its names, types and units: a lock to it.
    assert item["ownerName"] == {"S": client.owner_name}
    assert item["leaseDuration"] == {"S": "1000"}
    assert item["recordVersionNumber"] == {"S": lease.record_version_number}
    assert "isReleased" not in item
    assert item["permits"] == {"N": "2"}  # ours, carried along as an additional attribute
    java = JavaLockClient(dynamodb, table_name)
    with pytest.raises(ClientError, match="ConditionalCheckFailed"):
        java.acquire_new(permit_key)
    with pytest.raises(ClientError, match="ConditionalCheckFailed"):
        java.acquire_released(permit_key)
    lease.release()
    java.acquire_released(permit_key)  # released: the Java client may take it, as any lock


def test_a_java_lock_on_a_permits_key_holds_that_permit(make_client, dynamodb, table_name, key):
    java = JavaLockClient(dynamodb, table_name, lease_ms=int(LEASE * 1000))
    java.acquire_new(f"{key}#permit-0")  # whole item by PutItem: no permits attribute
    semaphore = make_client().semaphore(key, 1)
    assert semaphore.try_acquire() is None
    assert [holder.lock.owner_name for holder in semaphore.holders()] == ["java-host-1"]
    java.release(f"{key}#permit-0", delete=False)
    lease = semaphore.try_acquire()
    assert lease is not None
    assert raw(dynamodb, table_name, f"{key}#permit-0")["permits"] == {"N": "1"}  # stamped by our grant


def test_a_held_item_with_an_unreadable_count_is_refused_not_taken(make_client, dynamodb, table_name, key):
    java = JavaLockClient(dynamodb, table_name)
    item = {**java.item(f"{key}#permit-1"), "permits": {"S": "\x1b[2Jthree"}}
    dynamodb.put_item(TableName=table_name, Item=item)
    with pytest.raises(InvalidLockRequest, match="has an unreadable count") as refused:
        make_client().semaphore(key, 2).acquire(timeout=0)
    assert "\x1b" not in str(refused.value)
    assert raw(dynamodb, table_name, f"{key}#permit-1")["ownerName"] == {"S": "java-host-1"}  # left as it was
