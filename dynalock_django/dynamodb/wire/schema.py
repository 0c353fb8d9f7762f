"""The lock table: how it is created and what a usable one looks like."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..exceptions import ConfigurationError
from . import live_index

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import CreateTableInputTypeDef

TTL_UNAVAILABLE = "UNAVAILABLE"
"""``TableDescription.ttl_status`` of an endpoint without the TTL API (dynalite): expired items stay there."""

_TABLE_NAME = re.compile(r"[A-Za-z0-9_.\-]{3,255}")


def validate_table_name(table_name: object) -> str:
    """``table_name`` if DynamoDB accepts it (3 to 255 of ``A-Z a-z 0-9 _ . -``), else ConfigurationError saying so."""
    if not isinstance(table_name, str) or not _TABLE_NAME.fullmatch(table_name):
        raise ConfigurationError(
            f"Invalid DynamoDB table name {table_name!r}: use 3 to 255 characters "
            "from letters, digits, '_', '-' and '.'."
        )
    return table_name


def create_table_request(
    table_name: str,
    *,
    partition_key_name: str,
    sort_key_name: str | None,
    provisioned: tuple[int, int] | None = None,
) -> CreateTableInputTypeDef:
    """The CreateTable request for a lock table and its live-locks index.

    On-demand unless ``provisioned=(read, write)``; a provisioned index gets the table's capacity.
    """
    key_schema: list[Any] = [{"AttributeName": partition_key_name, "KeyType": "HASH"}]
    attributes: list[Any] = [{"AttributeName": partition_key_name, "AttributeType": "S"}]
    if sort_key_name:
        key_schema.append({"AttributeName": sort_key_name, "KeyType": "RANGE"})
        attributes.append({"AttributeName": sort_key_name, "AttributeType": "S"})
    attributes.append(live_index.attribute_definition())
    check_capacity(provisioned)
    request: CreateTableInputTypeDef = {
        "TableName": table_name,
        "KeySchema": key_schema,
        "AttributeDefinitions": attributes,
        "GlobalSecondaryIndexes": [live_index.index_definition(provisioned)],  # type: ignore[list-item]
        "BillingMode": "PAY_PER_REQUEST",
    }
    if provisioned is not None:
        read, write = provisioned
        request["BillingMode"] = "PROVISIONED"
        request["ProvisionedThroughput"] = {"ReadCapacityUnits": read, "WriteCapacityUnits": write}
    return request


def check_capacity(provisioned: tuple[int, int] | None) -> None:
    if provisioned is not None and (provisioned[0] < 1 or provisioned[1] < 1):
        read, write = provisioned
        raise ConfigurationError(f"Provisioned capacity must be at least 1 (got read={read}, write={write}).")


@dataclass(frozen=True)
class TableDescription:
    """What DescribeTable and DescribeTimeToLive say, and what is wrong for locks."""

    name: str
    status: str
    partition_key: tuple[str, str] | None  # (name, type)
    sort_key: tuple[str, str] | None
    billing_mode: str
    item_count: int  # approximate: DynamoDB refreshes it about every six hours
    ttl_status: str
    ttl_attribute: str | None
    problems: tuple[str, ...]
    # The live-locks index's status (ACTIVE, CREATING ...); None: the table has none, listings scan it.
    live_index_status: str | None = None
    # A global table's replica regions (empty: a table in one region), and how its replicas agree:
    # "EVENTUAL" (multi-region eventual consistency, DynamoDB's default) or "STRONG" (MRSC).
    replica_regions: tuple[str, ...] = ()
    multi_region_consistency: str | None = None

    @property
    def is_usable(self) -> bool:
        return self.status in {"ACTIVE", "UPDATING"} and not self.problems

    @property
    def is_eventually_consistent_global_table(self) -> bool:
        """Replicas that agree only eventually: two regions can each grant the same lock (see guarantees.md)."""
        return bool(self.replica_regions) and self.multi_region_consistency != "STRONG"


def describe(
    table: Any,
    ttl: Any,
    *,
    partition_key_name: str,
    sort_key_name: str | None,
    ttl_attribute: str | None,
) -> TableDescription:
    """Build a TableDescription from DescribeTable's ``Table`` and DescribeTimeToLive's description."""
    types = {a["AttributeName"]: a["AttributeType"] for a in table.get("AttributeDefinitions", [])}
    keys = {k["KeyType"]: k["AttributeName"] for k in table.get("KeySchema", [])}
    partition = (keys["HASH"], types.get(keys["HASH"], "?")) if "HASH" in keys else None
    sort = (keys["RANGE"], types.get(keys["RANGE"], "?")) if "RANGE" in keys else None

    problems: list[str] = []
    if partition != (partition_key_name, "S"):
        problems.append(
            f"partition key is {_show(partition)}, the client expects {partition_key_name} (S): "
            "set partition_key_name to match, or use another table"
        )
    expected_sort = (sort_key_name, "S") if sort_key_name else None
    if sort != expected_sort:
        problems.append(
            f"sort key is {_show(sort)}, the client expects {_show(expected_sort)}: "
            "set sort_key_name to match, or use another table"
        )
    ttl_status = ttl.get("TimeToLiveStatus", "DISABLED")
    stored_ttl_attribute = ttl.get("AttributeName")
    if ttl_attribute and ttl_status in {"ENABLED", "ENABLING"} and stored_ttl_attribute != ttl_attribute:
        problems.append(
            f"TTL is enabled on {stored_ttl_attribute!r}, not on {ttl_attribute!r}: released locks "
            "will never be cleaned up; set ttl_attribute to match"
        )
    return TableDescription(
        name=table["TableName"],
        status=table.get("TableStatus", "UNKNOWN"),
        partition_key=partition,
        sort_key=sort,
        billing_mode=table.get("BillingModeSummary", {}).get("BillingMode", "PROVISIONED"),
        item_count=int(table.get("ItemCount", 0)),
        ttl_status=ttl_status,
        ttl_attribute=stored_ttl_attribute,
        problems=tuple(problems),
        live_index_status=live_index.index_status(table),
        replica_regions=_replica_regions(table.get("Replicas")),
        multi_region_consistency=_text(table.get("MultiRegionConsistency")),
    )


def _replica_regions(replicas: Any) -> tuple[str, ...]:
    if not isinstance(replicas, list):
        return ()
    regions = (replica.get("RegionName") for replica in replicas if isinstance(replica, dict))
    return tuple(region if isinstance(region, str) else "?" for region in regions)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _show(key: tuple[str, str] | None) -> str:
    return f"{key[0]} ({key[1]})" if key else "none"
