"""A completion record on the wire: an item beside a lock's, ``<lock key>#result``, holding what its holder finished.

The record is written in the Java client's format as a *released* lock item
(owner, a zero lease, a fresh record version, ``isReleased``), so every
reader of the table, the Java client and our listings included, sees a free
lock and nothing it cannot parse. Ours on top: the completing holder's
``fencingToken``, the value (``result``, binary), when it stops counting
(``expiresAt``, epoch seconds: the decision) and the table's TTL attribute
set to the same second (clean-up only, days late). The lock items of the
Java client are never written: only the record's own key is.

Its write names the completing holder's token: a record is never replaced by
one from an earlier holder (a lower token), whatever the order they land in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..exceptions import InvalidLockRequest
from ..wire import item
from ..wire.expressions import Expressions, update_expression
from ..wire.item import MAX_PARTITION_KEY_BYTES, Item
from ..wire.layout import LockId, TableLayout
from ..wire.writes import new_version

RECORD_SUFFIX = "#result"
RESULT = "result"
EXPIRES_AT = "expiresAt"


@dataclass(frozen=True)
class CompletionRecord:
    """What a holder stored when it completed: ``value``, its ``fencing_token``, ``expires_at`` (epoch seconds)."""

    value: bytes
    fencing_token: int | None
    expires_at: float


def record_id(lock_id: LockId) -> LockId:
    """The record's key beside the lock ``lock_id`` (same sort key); InvalidLockRequest when it cannot fit."""
    key = lock_id[0] + RECORD_SUFFIX
    if len(key.encode()) > MAX_PARTITION_KEY_BYTES:
        raise InvalidLockRequest(
            f"The lock key is too long to hold a completion record beside it ({len(key.encode())} bytes with "
            f"{RECORD_SUFFIX!r}, DynamoDB allows {MAX_PARTITION_KEY_BYTES}); use a key at most "
            f"{MAX_PARTITION_KEY_BYTES - len(RECORD_SUFFIX)} bytes long."
        )
    return key, lock_id[1]


def store(
    layout: TableLayout, lock_id: LockId, *, owner_name: str, fencing_token: int, value: bytes, expires_at: float
) -> dict[str, Any]:
    """The UpdateItem that writes the record of the lock ``lock_id``'s holder, unless a later holder's is there."""
    exprs = Expressions()
    expiry = math.ceil(expires_at)
    sets = [
        f"{exprs.name(item.OWNER_NAME)} = {exprs.string(owner_name)}",
        f"{exprs.name(item.LEASE_DURATION)} = {exprs.string('0')}",
        f"{exprs.name(item.RECORD_VERSION_NUMBER)} = {exprs.string(new_version())}",
        f"{exprs.name(item.IS_RELEASED)} = {exprs.string(item.IS_RELEASED_VALUE)}",
        f"{exprs.name(item.FENCING_TOKEN)} = {exprs.number(fencing_token)}",
        f"{exprs.name(RESULT)} = {exprs.value({'B': value})}",
        f"{exprs.name(EXPIRES_AT)} = {exprs.number(expiry)}",
    ]
    if layout.ttl_attribute:
        sets.append(f"{exprs.name(layout.ttl_attribute)} = {exprs.number(expiry)}")
    token = exprs.name(item.FENCING_TOKEN)
    return {
        "TableName": layout.table_name,
        "Key": layout.key(record_id(lock_id)),
        "UpdateExpression": update_expression(sets, []),
        # No record yet, or one of an earlier holder (a lower token): never a later holder's.
        "ConditionExpression": f"attribute_not_exists({token}) OR {token} < {exprs.number(fencing_token)}",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        **exprs.params(),
    }


def unstore(layout: TableLayout, lock_id: LockId, *, fencing_token: int) -> dict[str, Any]:
    """The DeleteItem that takes back the record of the lock ``lock_id``'s holder ``fencing_token``, if still its."""
    exprs = Expressions()
    return {
        "TableName": layout.table_name,
        "Key": layout.key(record_id(lock_id)),
        "ConditionExpression": f"{exprs.name(item.FENCING_TOKEN)} = {exprs.number(fencing_token)}",
        **exprs.params(),
    }


def parse(stored: Item | None, now: float) -> CompletionRecord | None:
    """The record in ``stored``, or None: no item, expired by ``now`` (wall clock), or not a record at all.

    Anything read from the table may be hostile or hand-written: an item
    without a binary value or a whole-number expiry is no record.
    """
    if stored is None:
        return None
    try:
        value = bytes(stored[RESULT]["B"])
        expires_at = float(int(stored[EXPIRES_AT]["N"]))
    except (KeyError, TypeError, ValueError):
        return None
    if expires_at <= now:
        return None
    try:
        token: int | None = int(stored[item.FENCING_TOKEN]["N"])
    except (KeyError, TypeError, ValueError):
        token = None
    return CompletionRecord(value, token, expires_at)
