"""The lock items in DynamoDB: every read and write of an item goes through here, and nothing else does.

A conditional write that DynamoDB refuses comes back as :class:`Refused`,
carrying the item that refused it; any other botocore failure is raised as
one of our exceptions (:func:`.botocore_errors.translate`), the botocore
error attached as ``original``.
"""

from __future__ import annotations

import functools
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from .. import telemetry
from ..exceptions import DynamoDBError, DynamoDBUnavailable, InvalidLockRequest
from ..wire import item, live_index, validation
from ..wire.cursor import decode_cursor, encode_cursor
from ..wire.expressions import Expressions
from ..wire.item import Item, LockInfo
from ..wire.layout import LockId, TableLayout
from . import botocore_errors, deadlines

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from .breaker import CircuitBreaker
    from .connection import Connection

T = TypeVar("T")

acquire_logger = logging.getLogger("dynalock_django.acquire")

_BotoError = (ClientError, BotoCoreError)
# Cancellation reasons that no retry can change; the others (conflicts, throttling) pass with time.
_INVALID_TRANSACTION = frozenset({"ValidationError", "ItemCollectionSizeLimitExceeded"})
# Cancellation reasons that mean DynamoDB is overloaded: waiters back off as from any throttling.
_THROTTLED_TRANSACTION = botocore_errors.THROTTLED_REASONS

listing_logger = logging.getLogger("dynalock_django.listing")
# DynamoDB's limit on the keys of one BatchGetItem.
BATCH_GET_KEYS = 100
# BatchGetItem may leave keys unread (throttling, the 16 MB answer limit): they are asked for
# again after these pauses (seconds), then given up on as DynamoDBUnavailable.
UNPROCESSED_RETRY_PAUSES = (0.05, 0.1, 0.2, 0.4, 0.8)

P = ParamSpec("P")
R = TypeVar("R")


def _counted(operation: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Count each call of the method as one DynamoDB request of ``operation``, by result (``dynalock.requests``).

    Every failure of a request is raised ``from`` botocore's error; one raised
    without a cause sent nothing (a bad argument, a store known to lack
    transactions) and is not counted. Without OpenTelemetry the method is left as it is.
    """

    def decorate(method: Callable[P, R]) -> Callable[P, R]:
        if not telemetry.ENABLED:
            return method

        @functools.wraps(method)
        def counted(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                answer = method(*args, **kwargs)
            except Exception as error:
                if error.__cause__ is not None:
                    telemetry.request(operation, *_result_of(error))
                raise
            telemetry.request(operation, "ok")
            return answer

        return counted

    return decorate


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


class Cancelled(Exception):
    """A transaction was cancelled: nothing was written. ``refused`` holds the positions whose condition failed."""

    def __init__(self, refused: dict[int, Refused]) -> None:
        super().__init__("the transaction was cancelled")
        self.refused = refused


class TransactionsUnsupported(Exception):
    """The store does not know TransactWriteItems (dynalite answers UnknownOperationException)."""


@dataclass(frozen=True)
class ScanPage:
    """One page of a scan; pass ``cursor`` back to get the next (None: last page)."""

    locks: list[LockInfo]
    cursor: str | None
    # Read from the live-locks index (only the held items), not by a scan of the whole table.
    from_index: bool = False


class _NoLiveIndex(Exception):
    """The table has no live-locks index, or it is still being built."""


class LockStore:
    """Reads and conditional writes of lock items, for one table layout."""

    def __init__(self, connection: Connection, layout: TableLayout, breaker: CircuitBreaker) -> None:
        self._connection = connection
        self._layout = layout
        self._breaker = breaker
        self._said_no_index = False
        self._has_transactions = True  # until the store says otherwise, once

    @_counted("UpdateItem")
    def update(self, request: dict[str, Any], *, always: bool = False) -> Item:
        """Send an UpdateItem; the attributes it returned. Raises Refused when its condition failed.

        ``always``: even while the circuit breaker is open (a lease's renewal).
        """
        try:
            response = self._send(lambda client: client.update_item(**request), always=always)
        except _BotoError as error:
            raise self._refused_or_translated(error, request) from error
        return response.get("Attributes", {})

    @_counted("DeleteItem")
    def delete(self, request: dict[str, Any]) -> None:
        """Send a DeleteItem. Raises Refused when its condition failed."""
        try:
            self._send(lambda client: client.delete_item(**request))
        except _BotoError as error:
            raise self._refused_or_translated(error, request) from error

    @_counted("TransactWriteItems")
    def transact(self, requests: Sequence[dict[str, Any]]) -> None:
        """Send writes (each ``{"Update": ...}`` or ``{"Delete": ...}``) as one TransactWriteItems: all or none.

        Its ClientRequestToken (botocore would fill one in; ours says it is
        meant) makes botocore's retries of it idempotent: a retry of a
        transaction that was applied succeeds without applying it twice.
        Raises Cancelled when a condition failed, TransactionsUnsupported on a
        store without transactions (after its first answer, without asking again).
        """
        if not self._has_transactions:
            raise TransactionsUnsupported(self._layout.table_name)
        try:
            token = str(uuid.uuid4())
            self._send(
                lambda client: client.transact_write_items(
                    TransactItems=list(requests),  # type: ignore[arg-type]
                    ClientRequestToken=token,
                )
            )
        except _BotoError as error:
            raise self._cancelled_or_translated(error, requests) from error

    def read(self, lock_id: LockId) -> LockInfo | None:
        """The item as stored now (one consistent GetItem), or None."""
        stored = self.read_item(lock_id)
        return self._layout.parse(stored) if stored is not None else None

    def read_item(self, lock_id: LockId) -> Item | None:
        """The item as stored now, unparsed (one consistent GetItem), or None: for items that are not locks."""
        return self._read_key(self._layout.key(lock_id))

    def live_page(self, *, limit: int | None, cursor: str | None, key_prefix: str | None) -> ScanPage:
        """One Scan of the live-locks index: only held items are read (and billed).

        Without the index (or while it is built) the table is scanned instead,
        unreleased items only, and the log says so once; a cursor resumes the
        walk the way it began.
        """
        index_keys = self._layout.key_names() | {item.LIVE_LOCK_KEY}
        start = decode_cursor(cursor, index_keys, self._layout.key_names()) if cursor else None
        if start is None or set(start) == index_keys:
            try:
                return self._scan(limit, start, include_released=False, key_prefix=key_prefix, index=True)
            except _NoLiveIndex:
                if start is not None:
                    raise InvalidLockRequest("The live-locks index is gone: start again without a cursor.") from None
                self._say_no_index()
        return self._scan(limit, start, include_released=False, key_prefix=key_prefix, index=False)

    def read_many(self, lock_ids: Sequence[LockId]) -> dict[LockId, LockInfo | None]:
        """The items as stored now (None: no item), consistent reads: one BatchGetItem per 100 distinct keys.

        Keys DynamoDB leaves unprocessed are asked for again, after a pause.
        """
        found: dict[LockId, LockInfo | None] = dict.fromkeys(lock_ids)
        distinct = [self._layout.key(lock_id) for lock_id in found]
        for start in range(0, len(distinct), BATCH_GET_KEYS):
            for stored in self._batch_get(distinct[start : start + BATCH_GET_KEYS]):
                info = self._layout.parse(stored)
                found[(info.key, info.sort_key)] = info  # a checked lock id has a sort key exactly when the table does
        return found

    def _batch_get(self, keys: list[dict[str, Any]]) -> list[Item]:
        table = self._layout.table_name
        items: list[Item] = []
        pauses = iter(UNPROCESSED_RETRY_PAUSES)
        while True:
            response = self._batch_get_once({table: {"Keys": keys, "ConsistentRead": True}})
            items += response.get("Responses", {}).get(table, [])
            keys = list(response.get("UnprocessedKeys", {}).get(table, {}).get("Keys", []))
            if not keys:
                return items
            pause = next(pauses, None)
            if pause is None:
                raise DynamoDBUnavailable(f"DynamoDB left {len(keys)} keys of a BatchGetItem unread after retries.")
            time.sleep(pause)

    @_counted("BatchGetItem")
    def _batch_get_once(self, request: Any) -> dict[str, Any]:
        try:
            return dict(self._send(functools.partial(_batch_get_item, request=request)))
        except _BotoError as error:
            raise botocore_errors.translate(error, table_name=self._layout.table_name) from error

    def scan_page(
        self, *, limit: int | None, cursor: str | None, include_released: bool, key_prefix: str | None
    ) -> ScanPage:
        """One Scan request; the filters apply after DynamoDB has read (and billed) the page."""
        start = decode_cursor(cursor, self._layout.key_names()) if cursor else None
        return self._scan(limit, start, include_released=include_released, key_prefix=key_prefix, index=False)

    @_counted("Scan")
    def _scan(
        self,
        limit: int | None,
        start: dict[str, Any] | None,
        *,
        include_released: bool,
        key_prefix: str | None,
        index: bool,
    ) -> ScanPage:
        validation.check_page_size(limit)
        exprs = Expressions()
        filters = []
        if not include_released:
            filters.append(f"attribute_not_exists({exprs.name(item.IS_RELEASED)})")
        if key_prefix:
            filters.append(f"begins_with({exprs.name(self._layout.partition_key_name)}, {exprs.string(key_prefix)})")
        params: dict[str, Any] = {"TableName": self._layout.table_name, **exprs.params()}
        if index:
            params["IndexName"] = live_index.INDEX_NAME
        if filters:
            params["FilterExpression"] = " AND ".join(filters)
        if limit is not None:
            params["Limit"] = limit
        if start is not None:
            params["ExclusiveStartKey"] = start
        try:
            response = self._send(lambda client: client.scan(**params))
        except _BotoError as error:
            if index and _is_missing_index(error):
                raise _NoLiveIndex from error
            raise botocore_errors.translate(error, table_name=self._layout.table_name) from error
        last_key = response.get("LastEvaluatedKey")
        return ScanPage(
            [self._layout.parse(stored) for stored in response.get("Items", [])],
            encode_cursor(last_key) if last_key else None,
            from_index=index,
        )

    def _send(self, call: Callable[[DynamoDBClient], T], *, always: bool = False) -> T:
        """One boto3 call, through the circuit breaker (CircuitOpen: not sent), under the deadline rule."""
        probe = self._breaker.before_call(always=always)
        try:
            with deadlines.ours():
                result = call(self._connection.client)
        except _BotoError as error:
            if botocore_errors.got_no_answer(error):
                self._breaker.unanswered(error, probe=probe)
            else:
                self._breaker.answered(probe=probe)
            raise
        except BaseException:
            self._breaker.finished(probe=probe)
            raise
        self._breaker.answered(probe=probe)
        return result

    def _say_no_index(self) -> None:
        if not self._said_no_index:
            self._said_no_index = True
            listing_logger.warning(
                "Table %r has no usable live-locks index %r (missing, or still being built): listing live "
                "locks scans the whole table. Add it with LockClient.create_index() "
                "(manage.py dynalock createindex).",
                self._layout.table_name,
                live_index.INDEX_NAME,
            )

    @_counted("GetItem")
    def _read_key(self, key: dict[str, Any]) -> Item | None:
        try:
            response = self._send(
                lambda client: client.get_item(TableName=self._layout.table_name, Key=key, ConsistentRead=True)
            )
        except _BotoError as error:
            raise botocore_errors.translate(error, table_name=self._layout.table_name) from error
        return response.get("Item")

    def _cancelled_or_translated(self, error: BaseException, requests: Sequence[dict[str, Any]]) -> Exception:
        code = botocore_errors.error_code(error)
        if code == "UnknownOperationException":
            self._has_transactions = False
            acquire_logger.warning(
                "This DynamoDB endpoint has no transactions (TransactWriteItems: %s): acquire_many takes "
                "the keys one by one in sorted order, and is no longer atomic.",
                code,
            )
            return TransactionsUnsupported(str(error))
        if code != botocore_errors.TRANSACTION_CANCELLED:
            return botocore_errors.translate(error, table_name=self._layout.table_name)
        assert isinstance(error, ClientError)
        reasons: list[dict[str, Any]] = error.response.get("CancellationReasons", [])  # type: ignore[assignment]
        codes = {reason.get("Code") for reason in reasons}
        if codes & _INVALID_TRANSACTION:
            return botocore_errors.translate(error, table_name=self._layout.table_name)
        if codes & _THROTTLED_TRANSACTION and "ConditionalCheckFailed" not in codes:
            return DynamoDBUnavailable(f"DynamoDB is unavailable: the transaction was throttled ({error})", error)
        refused = {}
        for position, reason in enumerate(reasons):
            if reason.get("Code") == "ConditionalCheckFailed":
                key = next(iter(requests[position].values()))["Key"]
                refused[position] = Refused(reason.get("Item"), functools.partial(self._read_key, key), self._layout)
        return Cancelled(refused)

    def _refused_or_translated(self, error: BaseException, request: dict[str, Any]) -> Exception:
        if not botocore_errors.is_condition_failed(error):
            return botocore_errors.translate(error, table_name=self._layout.table_name)
        assert isinstance(error, ClientError)
        returned: Item | None = error.response.get("Item")  # type: ignore[assignment]
        return Refused(returned, lambda: self._read_key(request["Key"]), self._layout)


def _batch_get_item(client: DynamoDBClient, *, request: Any) -> Any:
    return client.batch_get_item(RequestItems=request)


def _is_missing_index(error: BaseException) -> bool:
    if botocore_errors.error_code(error) != "ValidationException":
        return False
    assert isinstance(error, ClientError)
    return live_index.is_missing_index_error(str(error.response.get("Error", {}).get("Message", "")))


def _result_of(error: Exception) -> tuple[telemetry.RequestResult, str | None]:
    """How a request ended, and, throttled, why (DynamoDB's throttling reason, or the error's code)."""
    if isinstance(error, Refused | Cancelled):
        return "condition_failed", None
    original = error.original if isinstance(error, DynamoDBError) else None
    if original is not None and botocore_errors.is_throttled(original):
        return "throttled", botocore_errors.throttling_reason(original)
    return "error", None
