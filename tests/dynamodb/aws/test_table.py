"""Creating, checking and listing the lock table."""

from __future__ import annotations

import time

import pytest

from dynalock_django.dynamodb import InvalidLockRequest, TableNotFound, TableNotReady, TableSchemaError
from dynalock_django.dynamodb.wire import schema

from ...dynamodb_support import PATIENCE, UNRENEWED, FaultInjector, create_bare_table, still_building, unique

pytestmark = pytest.mark.stores


def test_create_table_is_on_demand_with_ttl_and_idempotent(store, make_client, dynamodb):
    client = make_client(dynamodb, table=unique("created"))
    ttl = ("ENABLED", "ttl") if store.supports("ttl") else ("UNAVAILABLE", None)
    progress: list[str] = []
    description = client.create_table(on_progress=progress.append)
    assert description.status == "ACTIVE"  # dynalite keeps a new table CREATING for a while: it waited
    assert description.partition_key == ("key", "S")
    assert description.sort_key is None
    assert description.billing_mode == "PAY_PER_REQUEST"
    assert description.live_index_status == "ACTIVE"
    assert (description.ttl_status, description.ttl_attribute) == ttl
    assert description.is_usable
    assert any("Creating" in line for line in progress)
    again: list[str] = []
    description = client.create_table(on_progress=again.append)
    assert description.is_usable
    assert (description.ttl_status, description.ttl_attribute) == ttl
    assert any("already exists" in line for line in again)


def test_create_table_without_the_ttl_api_creates_a_usable_table(make_client, dynamodb):
    """As on dynalite, here on any store: UpdateTimeToLive answers UnknownOperationException."""
    FaultInjector(dynamodb).fail("UpdateTimeToLive", code="UnknownOperationException", times=2)
    client = make_client(dynamodb, table=unique("no-ttl"))
    for _ in range(2):  # and again: idempotent
        progress: list[str] = []
        description = client.create_table(on_progress=progress.append)
        assert (description.status, description.ttl_status, description.is_usable) == ("ACTIVE", "UNAVAILABLE", True)
        assert any("TTL is unavailable" in line for line in progress)
    client.acquire("k").release()


@pytest.mark.parametrize("method", ["create_table", "create_index"])
def test_a_table_still_building_at_the_timeout_is_table_not_ready_and_a_later_call_waits_on(
    make_client, dynamodb, method
):
    client = make_client(dynamodb, table=unique("building"))
    if method == "create_index":
        client.create_table()  # with its index, which DescribeTable will say is still being built
    create = getattr(client, method)
    with still_building(dynamodb):
        started = time.monotonic()
        with pytest.raises(TableNotReady, match="CREATING") as raised:
            create(timeout=0.3)
        waited = time.monotonic() - started
    assert isinstance(raised.value, TimeoutError)
    assert client.table_name in str(raised.value)
    assert 0.3 <= waited < 0.3 + PATIENCE  # it polled until the deadline, and not much past it
    assert create(timeout=PATIENCE).is_usable


@pytest.mark.parametrize("timeout", [-1, float("nan"), "5", True])
def test_a_table_wait_with_a_bad_timeout_is_refused_before_any_request(make_client, dynamodb, timeout):
    client = make_client(dynamodb, table=unique("never-created"))
    for create in (client.create_table, client.create_index):
        with pytest.raises(InvalidLockRequest, match="timeout"):
            create(timeout=timeout)
    with pytest.raises(TableNotFound):
        client.describe_table()


def test_create_table_with_provisioned_capacity_asks_for_it_and_gets_it(make_client, dynamodb):
    client = make_client(dynamodb, table=unique("provisioned"))
    assert client.create_table_request(provisioned=(5, 2))["ProvisionedThroughput"] == {
        "ReadCapacityUnits": 5,
        "WriteCapacityUnits": 2,
    }
    assert client.create_table_request(provisioned=(5, 2))["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"] == {
        "ReadCapacityUnits": 5,
        "WriteCapacityUnits": 2,
    }
    description = client.create_table(provisioned=(5, 2))
    assert (description.billing_mode, description.live_index_status) == ("PROVISIONED", "ACTIVE")


def test_create_table_request_is_the_dry_run(make_client, dynamodb):
    client = make_client(dynamodb, table="locks", sort_key_name="sk")
    assert client.create_table_request() == {
        "TableName": "locks",
        "KeySchema": [{"AttributeName": "key", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "AttributeDefinitions": [
            {"AttributeName": "key", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "liveLockKey", "AttributeType": "S"},
        ],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "liveLocks",
                "KeySchema": [{"AttributeName": "liveLockKey", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        "BillingMode": "PAY_PER_REQUEST",
    }


def test_a_missing_table_is_a_clear_error_with_the_original_attached(make_client, dynamodb):
    client = make_client(dynamodb, table=unique("missing"))
    for operation in (lambda: client.acquire("k", timeout=1), lambda: client.get("k"), client.describe_table):
        with pytest.raises(TableNotFound, match="create_table") as caught:
            operation()
        assert caught.value.original is caught.value.__cause__
        assert "ResourceNotFoundException" in str(caught.value.original)


def test_a_table_with_another_key_schema_is_refused(make_client, dynamodb):
    name = unique("wrong-schema")
    create_bare_table(dynamodb, name, partition_key="id")
    client = make_client(dynamodb, table=name)
    with pytest.raises(TableSchemaError, match="partition key is id \\(S\\), the client expects key"):
        client.check_table()
    with pytest.raises(TableSchemaError, match="different key schema"):
        client.acquire("k", timeout=1)
    with pytest.raises(TableSchemaError, match="partition key"):
        client.create_table()


@pytest.mark.requires("ttl")
def test_ttl_on_another_attribute_is_reported(make_client, dynamodb):
    name = unique("other-ttl")
    make_client(dynamodb, table=name, ttl_attribute="expires").create_table()
    client = make_client(dynamodb, table=name)
    assert client.describe_table().problems == (
        "TTL is enabled on 'expires', not on 'ttl': released locks will never be cleaned up; "
        "set ttl_attribute to match",
    )


def test_a_table_with_a_sort_key_locks_each_pair(make_client, dynamodb):
    name = unique("sorted")
    make_client(table=name, sort_key_name="sk").create_table()
    client = make_client(table=name, sort_key_name="sk")
    first = client.acquire("k", sort_key="a")
    second = client.acquire("k", sort_key="b")
    assert client.try_acquire("k", sort_key="a") is None
    item = dynamodb.get_item(TableName=name, Key={"key": {"S": "k"}, "sk": {"S": "a"}})["Item"]
    assert item["recordVersionNumber"] == {"S": first.record_version_number}
    with pytest.raises(InvalidLockRequest, match="pass sort_key="):
        client.acquire("k")
    first.release()
    second.release()


def test_scan_pages_through_the_table_without_loading_it(make_client):
    name = unique("scanned")
    # Leases no heartbeat renews within the test: 20 held leases renewed every 0.25 s kept moto's server (one
    # request at a time) so busy on a CI leg that a scan waited out its read time-out behind them.
    client = make_client(table=name, **UNRENEWED)
    client.create_table()
    leases = [client.acquire(f"lock-{i:02}") for i in range(25)]
    for lease in leases[:5]:
        lease.release()
    pages, cursor = [], None
    while True:
        page = client.scan_page(limit=10, cursor=cursor)
        pages.append(page.locks)
        if page.cursor is None:
            break
        cursor = page.cursor
    assert [len(p) for p in pages[:3]] == [10, 10, 5]
    assert sorted(i.key for p in pages for i in p) == [f"lock-{i:02}" for i in range(25)]
    live = list(client.scan(include_released=False, page_size=7))
    assert sorted(i.key for i in live) == [f"lock-{i:02}" for i in range(5, 25)]
    in_the_tens = list(client.scan(key_prefix="lock-1", include_released=False, page_size=7))
    assert sorted(i.key for i in in_the_tens) == [f"lock-{i}" for i in range(10, 20)]
    with pytest.raises(InvalidLockRequest, match="Invalid scan cursor"):
        client.scan_page(cursor="not-a-cursor")
    with pytest.raises(InvalidLockRequest, match="limit"):
        client.scan_page(limit=0)


@pytest.mark.parametrize(
    ("table", "regions", "eventual"),
    [
        ({}, (), False),  # a table in one region
        ({"Replicas": [{"RegionName": "us-east-1"}, {"RegionName": "eu-west-1"}]}, ("us-east-1", "eu-west-1"), True),
        (
            {"Replicas": [{"RegionName": "us-east-1"}], "MultiRegionConsistency": "EVENTUAL"},
            ("us-east-1",),
            True,
        ),
        ({"Replicas": [{"RegionName": "us-east-1"}], "MultiRegionConsistency": "STRONG"}, ("us-east-1",), False),
        ({"Replicas": "hostile", "MultiRegionConsistency": 7}, (), False),
        ({"Replicas": [{"RegionName": 5}, "x"]}, ("?",), True),
    ],
)
def test_a_global_tables_replicas_and_consistency_are_read_from_describe_table(table, regions, eventual):
    described = schema.describe(
        {"TableName": "locks", "KeySchema": [{"AttributeName": "key", "KeyType": "HASH"}], **table},
        {},
        partition_key_name="key",
        sort_key_name=None,
        ttl_attribute=None,
    )
    assert described.replica_regions == regions
    assert described.is_eventually_consistent_global_table is eventual
