"""Creating and inspecting the lock table (DescribeTable, CreateTable, TTL)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from . import botocore_errors, schema
from .exceptions import TableSchemaError
from .layout import TableLayout

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# DynamoDB takes seconds to create a table, local endpoints a fraction of one: poll soon, then back off.
FIRST_POLL_SECONDS = 0.05
MAX_POLL_SECONDS = 2.0
# What a store without the TTL API (dynalite) answers UpdateTimeToLive with.
UNKNOWN_OPERATION = "UnknownOperationException"


def describe(dynamodb: DynamoDBClient, layout: TableLayout) -> schema.TableDescription:
    """Status, key schema, TTL and what is wrong for locks (TableNotFound if missing)."""
    try:
        table = dynamodb.describe_table(TableName=layout.table_name)["Table"]
        ttl = dynamodb.describe_time_to_live(TableName=layout.table_name)["TimeToLiveDescription"]
    except (ClientError, BotoCoreError) as error:
        raise botocore_errors.translate(error, table_name=layout.table_name) from error
    return schema.describe(
        table,
        ttl,
        partition_key_name=layout.partition_key_name,
        sort_key_name=layout.sort_key_name,
        ttl_attribute=layout.ttl_attribute,
    )


def check(dynamodb: DynamoDBClient, layout: TableLayout) -> schema.TableDescription:
    description = describe(dynamodb, layout)
    if description.problems:
        raise TableSchemaError(
            f"Table {layout.table_name!r} cannot hold these locks: " + "; ".join(description.problems)
        )
    return description


def create_request(layout: TableLayout, provisioned: tuple[int, int] | None) -> dict[str, Any]:
    return dict(
        schema.create_table_request(
            layout.table_name,
            partition_key_name=layout.partition_key_name,
            sort_key_name=layout.sort_key_name,
            provisioned=provisioned,
        )
    )


def create(
    dynamodb: DynamoDBClient,
    layout: TableLayout,
    *,
    provisioned: tuple[int, int] | None,
    report: Callable[[str], None],
    stop: threading.Event,
) -> schema.TableDescription:
    try:
        dynamodb.create_table(**create_request(layout, provisioned))
        report(f"Creating table {layout.table_name!r}")
    except (ClientError, BotoCoreError) as error:
        if botocore_errors.error_code(error) != "ResourceInUseException":
            raise botocore_errors.translate(error, table_name=layout.table_name) from error
        report(f"Table {layout.table_name!r} already exists")
    description = check(dynamodb, layout)
    poll = FIRST_POLL_SECONDS
    while description.status != "ACTIVE" and not stop.is_set():
        report(f"Table {layout.table_name!r} is {description.status}; waiting")
        stop.wait(poll)
        poll = min(2 * poll, MAX_POLL_SECONDS)
        description = check(dynamodb, layout)
    if layout.ttl_attribute and description.ttl_status in {"DISABLED", "DISABLING"} and description.status == "ACTIVE":
        description = _enable_ttl(dynamodb, layout, description, report)
    report(f"Table {layout.table_name!r} is {description.status}")
    return description


def _enable_ttl(
    dynamodb: DynamoDBClient,
    layout: TableLayout,
    description: schema.TableDescription,
    report: Callable[[str], None],
) -> schema.TableDescription:
    assert layout.ttl_attribute is not None
    try:
        dynamodb.update_time_to_live(
            TableName=layout.table_name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": layout.ttl_attribute},
        )
    except (ClientError, BotoCoreError) as error:
        if botocore_errors.error_code(error) != UNKNOWN_OPERATION:
            raise botocore_errors.translate(error, table_name=layout.table_name) from error
        # Locks never depend on TTL (it only deletes old items), so the table is usable without it.
        report("UpdateTimeToLive is unknown to this endpoint: TTL is unavailable")
        return dataclasses.replace(description, ttl_status=schema.TTL_UNAVAILABLE)
    report(f"Enabled TTL on {layout.ttl_attribute!r} (clean-up of old items only)")
    return check(dynamodb, layout)
