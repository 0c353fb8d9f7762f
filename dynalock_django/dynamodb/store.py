"""The lock items in DynamoDB: every read and write of an item goes through here, and nothing else does.

A conditional write that DynamoDB refuses comes back as :class:`Refused`,
carrying the item that refused it; any other botocore failure is raised as
one of our exceptions (:func:`.botocore_errors.translate`), the botocore
error attached as ``original``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from . import botocore_errors, item, validation
from .cursor import decode_cursor, encode_cursor
from .expressions import Expressions
from .item import Item, LockInfo
from .layout import LockId, TableLayout

if TYPE_CHECKING:
    from .connection import Connection

_BotoError = (ClientError, BotoCoreError)


class Refused(Exception):
    """A conditional write failed its condition; nothing was written."""

    def __init__(self, returned: Item | None, read: Callable[[], Item | None], layout: TableLayout) -> None:
        super().__init__("the write's condition failed")
        self._returned = returned
        self._read = read
        self._layout = layout

    @functools.cached_property
    def current(self) -> LockInfo | None:
        """The item that refused the write (None: there is none).

        As DynamoDB returned it (``ReturnValuesOnConditionCheckFailure``), or
        read now with one consistent GetItem on endpoints that do not return it.
        """
        stored = self._returned if self._returned is not None else self._read()
        return self._layout.parse(stored) if stored is not None else None


@dataclass(frozen=True)
class ScanPage:
    """One page of a scan; pass ``cursor`` back to get the next (None: last page)."""

    locks: list[LockInfo]
    cursor: str | None


class LockStore:
    """Reads and conditional writes of lock items, for one table layout."""

    def __init__(self, connection: Connection, layout: TableLayout) -> None:
        self._connection = connection
        self._layout = layout

    def update(self, request: dict[str, Any]) -> Item:
        """Send an UpdateItem; the attributes it returned. Raises Refused when its condition failed."""
        try:
            response = self._connection.client.update_item(**request)
        except _BotoError as error:
            raise self._refused_or_translated(error, request) from error
        return response.get("Attributes", {})

    def delete(self, request: dict[str, Any]) -> None:
        """Send a DeleteItem. Raises Refused when its condition failed."""
        try:
            self._connection.client.delete_item(**request)
        except _BotoError as error:
            raise self._refused_or_translated(error, request) from error

    def read(self, lock_id: LockId) -> LockInfo | None:
        """The item as stored now (one consistent GetItem), or None."""
        stored = self._read_key(self._layout.key(lock_id))
        return self._layout.parse(stored) if stored is not None else None

    def scan(self, *, page_size: int | None, include_released: bool, key_prefix: str | None) -> Iterator[LockInfo]:
        """Every lock item, one Scan request per page, as they are iterated."""
        cursor: str | None = None
        while True:
            page = self.scan_page(
                limit=page_size, cursor=cursor, include_released=include_released, key_prefix=key_prefix
            )
            yield from page.locks
            if page.cursor is None:
                return
            cursor = page.cursor

    def scan_page(
        self, *, limit: int | None, cursor: str | None, include_released: bool, key_prefix: str | None
    ) -> ScanPage:
        """One Scan request; the filters apply after DynamoDB has read (and billed) the page."""
        validation.check_page_size(limit)
        exprs = Expressions()
        filters = []
        if not include_released:
            filters.append(f"attribute_not_exists({exprs.name(item.IS_RELEASED)})")
        if key_prefix:
            filters.append(f"begins_with({exprs.name(self._layout.partition_key_name)}, {exprs.string(key_prefix)})")
        params: dict[str, Any] = {"TableName": self._layout.table_name, **exprs.params()}
        if filters:
            params["FilterExpression"] = " AND ".join(filters)
        if limit is not None:
            params["Limit"] = limit
        if cursor:
            params["ExclusiveStartKey"] = decode_cursor(cursor, self._layout.key_names())
        try:
            response = self._connection.client.scan(**params)
        except _BotoError as error:
            raise botocore_errors.translate(error, table_name=self._layout.table_name) from error
        last_key = response.get("LastEvaluatedKey")
        return ScanPage(
            [self._layout.parse(stored) for stored in response.get("Items", [])],
            encode_cursor(last_key) if last_key else None,
        )

    def _read_key(self, key: dict[str, Any]) -> Item | None:
        try:
            response = self._connection.client.get_item(TableName=self._layout.table_name, Key=key, ConsistentRead=True)
        except _BotoError as error:
            raise botocore_errors.translate(error, table_name=self._layout.table_name) from error
        return response.get("Item")

    def _refused_or_translated(self, error: BaseException, request: dict[str, Any]) -> Exception:
        if not botocore_errors.is_condition_failed(error):
            return botocore_errors.translate(error, table_name=self._layout.table_name)
        assert isinstance(error, ClientError)
        returned: Item | None = error.response.get("Item")  # type: ignore[assignment]
        return Refused(returned, lambda: self._read_key(request["Key"]), self._layout)
