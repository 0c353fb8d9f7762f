"""The live-locks index: a sparse global secondary index holding only the locks this package holds.

Every grant (acquire, take over) sets ``liveLockKey`` to the lock's key in the
same UpdateItem, every renewal sets it again, and every release (ours, or an
operator's force release) removes it, so the index holds the held items and
nothing else: listing live locks reads those, not the released items the
table keeps for their fencing tokens.

Its partition key is the lock's own key, so the index spreads over as many
partitions as the table: a constant partition key (one "live" value, or a few
shards of it) would send every acquire, heartbeat and release of the whole
table to one index partition, whose write limit throttles the table's own
writes (DynamoDB throttles a write when its index cannot keep up), so a busy
table's heartbeats would fail together. A Scan of the index reads only the
index's items, one request per page, with the same cursor as a Scan of the
table; a Query would need the constant key. The Java client writes whole
items with PutItem and so drops ``liveLockKey``: its locks are not in the
index, and a full scan (``LockClient.scan``) is the way to find them.
"""

from __future__ import annotations

from typing import Any

from .item import LIVE_LOCK_KEY

INDEX_NAME = "liveLocks"


def attribute_definition() -> dict[str, str]:
    return {"AttributeName": LIVE_LOCK_KEY, "AttributeType": "S"}


def index_definition(provisioned: tuple[int, int] | None) -> dict[str, Any]:
    """The index as CreateTable and UpdateTable take it; every attribute projected, so a page needs no other read."""
    definition: dict[str, Any] = {
        "IndexName": INDEX_NAME,
        "KeySchema": [{"AttributeName": LIVE_LOCK_KEY, "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "ALL"},
    }
    if provisioned is not None:
        read, write = provisioned
        definition["ProvisionedThroughput"] = {"ReadCapacityUnits": read, "WriteCapacityUnits": write}
    return definition


def index_status(table: Any) -> str | None:
    """The index's status in DescribeTable's ``Table`` (``ACTIVE``, ``CREATING`` ...); None when it has none."""
    for index in table.get("GlobalSecondaryIndexes", []):
        if index.get("IndexName") == INDEX_NAME:
            status = index.get("IndexStatus", "ACTIVE")
            # Backfilling an index added to a table with items: DynamoDB refuses reads of it meanwhile.
            return "CREATING" if index.get("Backfilling") else str(status)
    return None


def is_missing_index_error(message: str) -> bool:
    """DynamoDB's answer to a Scan of an index the table lacks, or one still being built."""
    text = message.lower()
    return "specified index" in text or "backfilling" in text
