"""Creating and inspecting the lock table (DescribeTable, CreateTable, TTL)."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from ..exceptions import TableNotReady, TableSchemaError
from ..wire import live_index, schema
from ..wire.layout import TableLayout
from . import botocore_errors, deadlines

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# DynamoDB takes seconds to create a table, local endpoints a fraction of one: poll soon, then back off.
FIRST_POLL_SECONDS = 0.05
MAX_POLL_SECONDS = 2.0
# What a store without the TTL API (dynalite) answers UpdateTimeToLive with.
UNKNOWN_OPERATION = "UnknownOperationException"
_NO_INDEX = (
    "this endpoint cannot add indexes to existing tables. Listing live locks scans the table there; "
    "a table created anew (create_table) has the index."
)


def describe(dynamodb: DynamoDBClient, layout: TableLayout) -> schema.TableDescription:
    """Status, key schema, TTL and what is wrong for locks (TableNotFound if missing)."""
    table = _describe_table(dynamodb, layout)
    try:
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
    timeout: float | None,
) -> schema.TableDescription:
    deadline = _Deadline(timeout)
    with deadline.bounding_retries():
        try:
            dynamodb.create_table(**create_request(layout, provisioned))
            report(f"Creating table {layout.table_name!r}")
        except (ClientError, BotoCoreError) as error:
            if botocore_errors.error_code(error) != "ResourceInUseException":
                raise botocore_errors.translate(error, table_name=layout.table_name) from error
            report(f"Table {layout.table_name!r} already exists")
        description = _wait(dynamodb, layout, lambda d: d.status == "ACTIVE", report, stop, deadline)
        if (
            layout.ttl_attribute
            and description.ttl_status in {"DISABLED", "DISABLING"}
            and description.status == "ACTIVE"
        ):
            description = _enable_ttl(dynamodb, layout, description, report)
    report(f"Table {layout.table_name!r} is {description.status}")
    return description


def create_index(
    dynamodb: DynamoDBClient,
    layout: TableLayout,
    *,
    report: Callable[[str], None],
    stop: threading.Event,
    timeout: float | None,
) -> schema.TableDescription:
    """Add the live-locks index to an existing table (one UpdateTable) and wait until it is ACTIVE.

    Idempotent. A provisioned table's index gets the table's capacity.
    Raises TableSchemaError when the endpoint accepts the request but adds no index (dynalite),
    TableNotReady when the index is not ACTIVE by ``timeout`` seconds.
    """
    deadline = _Deadline(timeout)
    with deadline.bounding_retries():
        description = check(dynamodb, layout)
        if description.live_index_status is None:
            _request_index(dynamodb, layout, provisioned=description.billing_mode == "PROVISIONED")
            report(f"Creating index {live_index.INDEX_NAME!r} on table {layout.table_name!r}")
            description = check(dynamodb, layout)
            if description.live_index_status is None:
                raise TableSchemaError(
                    f"The endpoint accepted the new index {live_index.INDEX_NAME!r} but table {layout.table_name!r} "
                    f"has none: {_NO_INDEX}"
                )
        description = _wait(dynamodb, layout, lambda d: d.live_index_status == "ACTIVE", report, stop, deadline)
    report(f"Index {live_index.INDEX_NAME!r} is {description.live_index_status}")
    return description


def _request_index(dynamodb: DynamoDBClient, layout: TableLayout, *, provisioned: bool) -> None:
    stored = _describe_table(dynamodb, layout)
    throughput = stored.get("ProvisionedThroughput", {})
    capacity = (throughput.get("ReadCapacityUnits", 1), throughput.get("WriteCapacityUnits", 1))
    index: Any = live_index.index_definition(capacity if provisioned else None)
    # The table's own definitions go along: DynamoDB merges them, moto replaces them with these.
    attributes = [*stored.get("AttributeDefinitions", []), live_index.attribute_definition()]
    try:
        dynamodb.update_table(
            TableName=layout.table_name,
            AttributeDefinitions=attributes,
            GlobalSecondaryIndexUpdates=[{"Create": index}],
        )
    except (ClientError, BotoCoreError) as error:
        if botocore_errors.error_code(error) == "ValidationException":
            raise TableSchemaError(
                f"The endpoint refused to add the index {live_index.INDEX_NAME!r} to table "
                f"{layout.table_name!r} ({error}): {_NO_INDEX}"
            ) from error
        raise botocore_errors.translate(error, table_name=layout.table_name) from error


@dataclasses.dataclass(frozen=True)
class _Deadline:
    """When a wait for ACTIVE gives up: ``seconds`` after it began (None: never)."""

    seconds: float | None
    began: float = dataclasses.field(default_factory=time.monotonic)

    def remaining(self) -> float | None:
        return None if self.seconds is None else self.began + self.seconds - time.monotonic()

    @contextlib.contextmanager
    def bounding_retries(self) -> Iterator[None]:
        """With a timeout, the lock client's rule for its requests (aws/deadlines.py): botocore retries no
        time-out and starts no retry past the deadline, so a hung endpoint cannot stretch one status read
        over every attempt of the botocore config. Without one, botocore retries as the config says."""
        if self.seconds is None:
            yield
            return
        with deadlines.within(self.seconds):
            yield


def _wait(
    dynamodb: DynamoDBClient,
    layout: TableLayout,
    ready: Callable[[schema.TableDescription], bool],
    report: Callable[[str], None],
    stop: threading.Event,
    deadline: _Deadline,
) -> schema.TableDescription:
    """Describe the table until it is ``ready``, polling soon and then less often (or until ``stop``).

    TableNotReady once the deadline has passed: at most one status read (DescribeTable and
    DescribeTimeToLive, one attempt each past the deadline) after it.
    """
    description = check(dynamodb, layout)
    poll = FIRST_POLL_SECONDS
    while not ready(description) and not stop.is_set():
        state = (
            f"table {layout.table_name!r} is {description.status}, "
            f"index {live_index.INDEX_NAME!r} {description.live_index_status or 'absent'}"
        )
        remaining = deadline.remaining()
        if remaining is not None and remaining <= 0:
            raise TableNotReady(
                f"Not ready after {deadline.seconds:g}s: {state}. DynamoDB goes on building it, "
                "and waiting again picks up where this wait left off."
            )
        report(f"{state[0].upper()}{state[1:]}; waiting")
        stop.wait(poll if remaining is None else min(poll, remaining))
        poll = min(2 * poll, MAX_POLL_SECONDS)
        description = check(dynamodb, layout)
    return description


def _describe_table(dynamodb: DynamoDBClient, layout: TableLayout) -> Any:
    try:
        return dynamodb.describe_table(TableName=layout.table_name)["Table"]
    except (ClientError, BotoCoreError) as error:
        raise botocore_errors.translate(error, table_name=layout.table_name) from error


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
