"""Creating and inspecting the lock table (DescribeTable, CreateTable, TTL)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from . import botocore_errors, schema
from .exceptions import TableSchemaError
from .layout import TableLayout

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


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
    wait: bool,
    poll_interval: float,
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
    while wait and description.status != "ACTIVE" and not stop.is_set():
        report(f"Table {layout.table_name!r} is {description.status}; waiting")
        stop.wait(poll_interval)
        description = check(dynamodb, layout)
    if layout.ttl_attribute and description.ttl_status in {"DISABLED", "DISABLING"} and description.status == "ACTIVE":
        try:
            dynamodb.update_time_to_live(
                TableName=layout.table_name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": layout.ttl_attribute},
            )
        except (ClientError, BotoCoreError) as error:
            raise botocore_errors.translate(error, table_name=layout.table_name) from error
        report(f"Enabled TTL on {layout.ttl_attribute!r} (clean-up of old items only)")
        description = check(dynamodb, layout)
    report(f"Table {layout.table_name!r} is {description.status}")
    return description
