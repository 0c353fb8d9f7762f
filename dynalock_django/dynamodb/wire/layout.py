"""Where locks live: the table, its key attributes and the TTL attribute."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .item import Item, LockInfo, parse_item

LockId = tuple[str, str | None]

# How long a lock item outlives its lease before DynamoDB's TTL may delete it.
# Clean-up only: a deleted item restarts its fencing token from the wall clock.
ITEM_RETENTION_SECONDS = 86400.0


@dataclass(frozen=True)
class TableLayout:
    """The table's name, key attribute names and TTL attribute, as a client is configured."""

    table_name: str
    partition_key_name: str
    sort_key_name: str | None
    ttl_attribute: str | None

    def key(self, lock_id: LockId) -> dict[str, Any]:
        key: dict[str, Any] = {self.partition_key_name: {"S": lock_id[0]}}
        if self.sort_key_name is not None:
            key[self.sort_key_name] = {"S": lock_id[1]}
        return key

    def key_names(self) -> set[str]:
        return {self.partition_key_name} | ({self.sort_key_name} if self.sort_key_name else set())

    def parse(self, stored: Item) -> LockInfo:
        return parse_item(stored, self.partition_key_name, self.sort_key_name)

    def ttl_seconds(self, wall_time: float, lease_duration: float) -> int:
        # Clean-up only: DynamoDB deletes expired items up to days late, and a
        # holder keeps pushing this forward, so it never decides who holds a lock.
        return int(wall_time + lease_duration + ITEM_RETENTION_SECONDS)
