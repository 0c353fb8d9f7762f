"""The live-locks index: every write keeps ``liveLockKey`` on held items only, and listing reads just those."""

from __future__ import annotations

import logging

import pytest

from dynalock_django.dynamodb import (
    MAX_PARTITION_KEY_BYTES,
    InvalidLockRequest,
    TableNotFound,
    TableSchemaError,
)
from dynalock_django.dynamodb.wire import live_index
from dynalock_django.dynamodb.wire.item import MAX_ITEM_BYTES, item_size

from ...dynamodb_support import LEASE, RequestCounter, create_bare_table, make_dynamodb, unique
from ...java_client import JavaLockClient
from ...stores import private_endpoint_url

pytestmark = pytest.mark.stores

TAB = "django-user:7/tab:first"


def raw(dynamodb, table_name, key):
    return dynamodb.get_item(TableName=table_name, Key={"key": {"S": key}}, ConsistentRead=True).get("Item")


def live_mark(client, key):
    return (raw(client.dynamodb, client.table_name, key) or {}).get("liveLockKey")


def live_keys(client, prefix):
    return sorted(lock.key for lock in client.live_locks(key_prefix=prefix))


def assert_the_index_lists(client, keys):
    """One page of live locks, read from the index, lists exactly ``keys``."""
    page = client.live_page()
    assert page.from_index
    assert [lock.key for lock in page.locks] == keys


def test_acquire_and_renew_set_the_mark_and_release_removes_it(make_client, key):
    client = make_client()
    lease = client.acquire(key)
    assert live_mark(client, key) == {"S": key}
    lease.extend()
    assert live_mark(client, key) == {"S": key}
    lease.release()
    assert live_mark(client, key) is None
    again = client.acquire(key)  # a released item taken again
    assert live_mark(client, key) == {"S": key}
    again.release()
    assert live_mark(client, key) is None


def test_a_renewal_marks_a_lock_taken_before_the_index_existed(make_client, key):
    """An older version of the package acquired it without the mark: the next heartbeat adds it."""
    client = make_client()
    lease = client.acquire(key)
    client.dynamodb.update_item(
        TableName=client.table_name, Key={"key": {"S": key}}, UpdateExpression="REMOVE liveLockKey"
    )
    lease.extend()
    assert live_mark(client, key) == {"S": key}
    lease.release()


def test_take_over_sets_the_mark_and_force_release_removes_it(make_client, key):
    holder, operator = make_client(), make_client()
    holder.acquire(key, owner_name=TAB, keep_alive=False)
    taken = operator.take_over(operator.get(key), keep_alive=False)
    assert live_mark(operator, key) == {"S": key}
    assert operator.get(key).owner_name == taken.owner_name != TAB
    operator.force_release(operator.get(key), released_by="admin")
    assert live_mark(operator, key) is None


def test_a_detached_lease_is_marked_while_held_through_any_client(make_client, key):
    granting, serving = make_client(), make_client()
    granted = granting.acquire(key, owner_name=TAB, keep_alive=False)
    assert live_mark(granting, key) == {"S": key}
    handle = serving.lease(key, owner_name=TAB, fencing_token=granted.fencing_token)
    handle.extend()
    assert live_mark(serving, key) == {"S": key}
    assert handle.release() is True
    assert live_mark(serving, key) is None


def test_delete_on_release_leaves_nothing_in_the_index(make_client, key):
    client = make_client(delete_on_release=True)
    client.acquire(key).release()
    assert raw(client.dynamodb, client.table_name, key) is None
    assert live_keys(client, key) == []


def test_live_locks_lists_held_locks_only(make_client):
    client, prefix = make_client(), unique("listed") + "/"
    leases = [client.acquire(f"{prefix}{i}") for i in range(6)]
    for lease in leases[:2]:
        lease.release()
    assert live_keys(client, prefix) == [f"{prefix}{i}" for i in range(2, 6)]
    leases[2].release()
    assert live_keys(client, prefix) == [f"{prefix}{i}" for i in range(3, 6)]
    for lease in leases[3:]:
        lease.release()
    assert live_keys(client, prefix) == []


def test_an_expired_lock_stays_listed_until_someone_takes_it(make_client):
    """Its holder stopped renewing: the item is not released, so it is listed (the live-locks page calls it dead)."""
    first, second, key = make_client(), make_client(), unique("expired")
    first.acquire(key, owner_name=TAB, keep_alive=False, lease_duration=LEASE)  # nobody renews it
    assert [lock.owner_name for lock in first.live_locks(key_prefix=key)] == [TAB]
    taken = second.acquire(key, timeout=5 * LEASE)  # after the lease has stood on second's clock
    assert [lock.owner_name for lock in first.live_locks(key_prefix=key)] == [second.owner_name]
    taken.release()
    assert live_keys(first, key) == []


def test_a_released_item_that_kept_its_mark_is_not_listed(make_client, dynamodb, table_name):
    """Released by a client that does not know the mark (an older version of this package): still not live."""
    key = unique("kept-mark")
    dynamodb.put_item(
        TableName=table_name,
        Item={"key": {"S": key}, "liveLockKey": {"S": key}, "isReleased": {"S": "1"}, "ownerName": {"S": "old"}},
    )
    assert live_keys(make_client(), key) == []


def test_the_java_clients_locks_are_found_by_a_scan_only(make_client, dynamodb, own_table):
    key = unique("java")
    JavaLockClient(dynamodb, own_table).acquire_new(key)
    client = make_client(table=own_table)  # scanned below
    assert live_keys(client, key) == []
    assert [lock.owner_name for lock in client.scan(include_released=False, key_prefix=key)] == ["java-host-1"]


def test_a_page_of_live_locks_is_one_scan_of_the_index_and_pages_resume(make_client, dynamodb):
    holder, client, prefix = make_client(), make_client(dynamodb), unique("paged") + "/"
    leases = [holder.acquire(f"{prefix}{i:02}") for i in range(12)]  # heartbeats through another connection
    counter = RequestCounter(dynamodb)
    seen, cursor, pages = [], None, 0
    while True:
        page = client.live_page(limit=5, cursor=cursor, key_prefix=prefix)
        pages += 1
        assert page.from_index
        seen += [lock.key for lock in page.locks]
        if page.cursor is None:
            break
        cursor = page.cursor
    assert sorted(seen) == [f"{prefix}{i:02}" for i in range(12)]
    assert pages >= 3  # 12 locks, 5 a page: the cursor was followed
    assert dict(counter.calls) == {"Scan": pages}
    with pytest.raises(InvalidLockRequest, match="Invalid scan cursor"):
        client.live_page(cursor="not-a-cursor")
    for lease in leases:
        lease.release(best_effort=True)  # clean-up: a loaded server may not answer it within the read time-out


def test_without_the_index_listing_scans_the_table_and_says_so_once(make_client, dynamodb, caplog):
    name = unique("no-index")
    create_bare_table(dynamodb, name)
    client = make_client(dynamodb, table=name)
    assert client.describe_table().live_index_status is None
    leases = [make_client(table=name).acquire(f"lock-{i}") for i in range(7)]
    leases[0].release()
    counter = RequestCounter(dynamodb)
    with caplog.at_level(logging.WARNING, logger="dynalock_django.listing"):
        first = client.live_page(limit=4)
        assert not first.from_index
        assert dict(counter.calls) == {"Scan": 2}  # the index refused (free), then the table
        assert first.cursor is not None
        rest = client.live_page(limit=4, cursor=first.cursor)  # the walk goes on as it began
        assert sorted(lock.key for lock in list(first.locks) + list(rest.locks)) == [f"lock-{i}" for i in range(1, 7)]
        list(client.live_locks())
    warnings = [r for r in caplog.records if "no usable live-locks index" in r.getMessage()]
    assert len(warnings) == 1
    assert "createindex" in warnings[0].getMessage()
    for lease in leases[1:]:
        lease.release()


# DynamoDB Local fills a new index of a small table in seconds; a fill that stopped fails the test
# with TableNotReady then, not at the suite's five-minute limit.
FILL_TIMEOUT = 60


@pytest.fixture
def dynamodb_to_add_an_index_on(store):
    """A boto3 client of the store, or (DynamoDB Local) of an instance of the test's own: see private_endpoint_url."""
    with private_endpoint_url(store) as endpoint_url:
        yield make_dynamodb(endpoint_url)


@pytest.mark.requires("add_index")
def test_create_index_adds_it_to_an_existing_table_and_listing_uses_it(make_client, dynamodb_to_add_an_index_on):
    dynamodb = dynamodb_to_add_an_index_on
    name = unique("add-index")
    create_bare_table(dynamodb, name)
    # DynamoDB Local answers writes with InternalFailure for a moment while it fills the new index: a
    # lease of a few renewals, and no breaker (its own tests are elsewhere) to open on them.
    client = make_client(dynamodb, table=name, lease_duration=5, heartbeat_period=1, breaker_threshold=None)
    held = client.acquire("held")  # marked, although the table has no index yet
    client.acquire("released").release()
    progress: list[str] = []
    assert client.create_index(on_progress=progress.append, timeout=FILL_TIMEOUT).live_index_status == "ACTIVE"
    assert any("Creating index 'liveLocks'" in line for line in progress)
    assert client.create_index().live_index_status == "ACTIVE"  # idempotent
    assert_the_index_lists(client, ["held"])
    held.release()


@pytest.mark.requires("add_index")
def test_create_index_on_a_provisioned_table_gives_the_index_its_capacity(make_client, dynamodb_to_add_an_index_on):
    dynamodb = dynamodb_to_add_an_index_on
    name = unique("provisioned-index")
    create_bare_table(dynamodb, name, provisioned=True)
    client = make_client(dynamodb, table=name)
    assert client.create_index(timeout=FILL_TIMEOUT).live_index_status == "ACTIVE"
    index = dynamodb.describe_table(TableName=name)["Table"]["GlobalSecondaryIndexes"][0]
    assert (
        index["ProvisionedThroughput"]["ReadCapacityUnits"],
        index["ProvisionedThroughput"]["WriteCapacityUnits"],
    ) == (3, 2)


def test_a_cursor_of_an_index_the_table_lacks_is_refused(make_client, dynamodb):
    holder, prefix = make_client(), unique("gone") + "/"
    leases = [holder.acquire(f"{prefix}{i}") for i in range(3)]
    cursor = holder.live_page(limit=1, key_prefix=prefix).cursor
    name = unique("no-index")
    create_bare_table(dynamodb, name)
    with pytest.raises(InvalidLockRequest, match="index is gone: start again without a cursor"):
        make_client(dynamodb, table=name).live_page(cursor=cursor)
    for lease in leases:
        lease.release()


@pytest.mark.parametrize(
    ("indexes", "status"),
    [
        ([], None),
        ([{"IndexName": "other", "IndexStatus": "ACTIVE"}], None),
        ([{"IndexName": "liveLocks", "IndexStatus": "ACTIVE"}], "ACTIVE"),
        ([{"IndexName": "liveLocks", "IndexStatus": "ACTIVE", "Backfilling": True}], "CREATING"),
        ([{"IndexName": "liveLocks", "IndexStatus": "CREATING"}], "CREATING"),
    ],
)
def test_the_index_status_is_read_from_describe_table(indexes, status):
    assert live_index.index_status({"GlobalSecondaryIndexes": indexes}) == status


@pytest.mark.parametrize(
    ("message", "missing"),
    [
        ("The table does not have the specified index: liveLocks", True),
        ("Cannot read from backfilling global secondary index: liveLocks", True),
        ("One or more parameter values were invalid", False),
    ],
)
def test_a_missing_or_backfilling_index_is_told_from_other_refusals(message, missing):
    assert live_index.is_missing_index_error(message) is missing


@pytest.mark.parametrize("provisioned", [False, True])
def test_an_endpoint_that_cannot_add_the_index_is_a_clear_error(store, make_client, dynamodb, provisioned):
    """dynalite refuses an on-demand index, and accepts a provisioned one without adding it."""
    if store.supports("add_index"):
        pytest.skip(f"{store.name} adds indexes to existing tables")
    name = unique("cannot-index")
    create_bare_table(dynamodb, name, provisioned=provisioned)
    with pytest.raises(TableSchemaError, match="liveLocks.*cannot add indexes to existing tables"):
        make_client(dynamodb, table=name).create_index()


def test_a_table_created_by_the_client_has_the_index_on_every_store(make_client, own_table):
    client = make_client(table=own_table)  # own_table is made by LockClient.create_table
    client.acquire("k").release()
    lease = client.acquire("k2")
    assert_the_index_lists(client, ["k2"])
    lease.release()


@pytest.mark.requires("binary_size")
def test_the_largest_data_accepted_leaves_room_for_the_mark(make_client, table_name):
    """With the longest key, the mark repeats 2 KB: the data budget counts it, so the item stays under 400 KB."""
    key = "k" * MAX_PARTITION_KEY_BYTES
    probe = make_client(table=unique("absent"))  # the size check comes before any request

    def accepted(size: int) -> bool:
        try:
            probe.acquire(key, data=b"x" * size, timeout=0)
        except InvalidLockRequest:
            return False
        except TableNotFound:
            return True
        raise AssertionError("the probe's table does not exist")

    low, high = 0, MAX_ITEM_BYTES  # accepted(low), not accepted(high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if accepted(middle) else (low, middle)
    client = make_client()
    lease = client.acquire(key, data=b"x" * low)
    stored = raw(client.dynamodb, table_name, key)
    released_later = {"isReleased": {"S": "1"}, "releasedBy": {"S": "x" * 256}}
    assert "liveLockKey" in stored
    assert item_size({**stored, **released_later}) <= MAX_ITEM_BYTES
    lease.release()
