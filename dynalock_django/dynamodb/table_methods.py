"""LockClient's methods for its table: create it, add its index, describe it, check it (a base class of LockClient)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .aws import table_management
from .wire import validation

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from .wire.layout import TableLayout
    from .wire.schema import TableDescription

logger = logging.getLogger("dynalock_django.table")


class TableMethods:
    """The lock table's management; the client provides ``dynamodb``, ``layout`` and when to stop waiting."""

    layout: TableLayout

    @property
    def dynamodb(self) -> DynamoDBClient:
        raise NotImplementedError

    def _closed_event(self) -> threading.Event:
        raise NotImplementedError

    def describe_table(self) -> TableDescription:
        """Status, key schema, TTL and what is wrong for locks (TableNotFound if missing)."""
        return table_management.describe(self.dynamodb, self.layout)

    def check_table(self) -> TableDescription:
        """describe_table(), raising TableSchemaError if the table cannot hold these locks."""
        return table_management.check(self.dynamodb, self.layout)

    def create_table_request(self, *, provisioned: tuple[int, int] | None = None) -> dict[str, Any]:
        """The CreateTable request ``create_table`` sends (for dry runs)."""
        return table_management.create_request(self.layout, provisioned)

    def create_table(
        self,
        *,
        provisioned: tuple[int, int] | None = None,
        on_progress: Callable[[str], None] | None = None,
        timeout: float | None = None,
    ) -> TableDescription:
        """Create the lock table and its live-locks index (on-demand unless ``provisioned=(read, write)``), enable TTL.

        Idempotent: an existing table is checked, not recreated. Returns once
        the table is ACTIVE, reporting each status seen to ``on_progress``.
        On an endpoint without the TTL API the table is created all the same,
        with ``ttl_status`` ``"UNAVAILABLE"`` (``TTL_UNAVAILABLE``): locks work, old items stay.
        With a ``timeout`` (seconds), raises TableNotReady if the table is not ACTIVE by then.
        """
        validation.check_timeout(timeout)
        return table_management.create(
            self.dynamodb,
            self.layout,
            provisioned=provisioned,
            report=on_progress or (lambda message: logger.info("%s", message)),
            stop=self._closed_event(),
            timeout=timeout,
        )

    def create_index(
        self, *, on_progress: Callable[[str], None] | None = None, timeout: float | None = None
    ) -> TableDescription:
        """Add the live-locks index to a table created without it (one UpdateTable); wait until it is ACTIVE.

        Idempotent. DynamoDB builds the index from the table's items, which
        takes minutes on a large table; listings scan the table meanwhile.
        Raises TableSchemaError on an endpoint that cannot add indexes (dynalite), and
        with a ``timeout`` (seconds) TableNotReady if the index is not ACTIVE by then.
        """
        validation.check_timeout(timeout)
        return table_management.create_index(
            self.dynamodb,
            self.layout,
            report=on_progress or (lambda message: logger.info("%s", message)),
            stop=self._closed_event(),
            timeout=timeout,
        )
