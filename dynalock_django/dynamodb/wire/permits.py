"""Counted locks on the wire: a set of N permits is N lock items, ``name#permit-<i>`` (or ``#reader-<i>``).

Each permit is an ordinary lock item in the Java client's format (its own
record version, lease, heartbeat and fencing token), plus ``permits`` (N):
the count is part of the name's contract, so a caller asking for another
count is refused instead of silently changing how many may hold it.

The key is the set's name, a suffix naming the kind of set, then the
permit's index in decimal. The suffix's last ``#`` decodes every key
uniquely (the index is digits only), so two sets never share an item. The
Django layer's keys never end in such a suffix (``#`` occurs there only
before a 64-digit hash), and a name that itself ends like a permit's key is
refused, so a set's write item or permits never land on another set's. A
plain lock whose key a user chose to end in ``#permit-<i>`` shares that
permit's item: one item is still one holder, so the set only has one
permit fewer while it is held.
"""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING, Any

from ..exceptions import CountInUse, InvalidLockRequest
from . import conditions, item
from .display import printable
from .expressions import Expressions, update_expression
from .item import MAX_PARTITION_KEY_BYTES, PERMITS, LockInfo

if TYPE_CHECKING:
    from .layout import LockId, TableLayout

SEMAPHORE_SUFFIX = "#permit-"
READER_SUFFIX = "#reader-"

# DynamoDB's BatchGetItem reads at most 100 keys: a set is read in one request, with the key one past
# its last permit (a larger set's count shows there) and, for readers, the write item.
MAX_PERMITS = 99
"""The most permits a semaphore may have: its set is read in one BatchGetItem."""
MAX_READERS = 98
"""The most readers a readers-writer lock may allow (``max_readers=``): read with its write item."""

_PERMIT_KEY = re.compile(r"(?P<name>.*)(?P<suffix>#permit-|#reader-)(?P<index>0|[1-9][0-9]{0,2})", re.DOTALL)
_LONGEST_SUFFIX_BYTES = len(SEMAPHORE_SUFFIX) + len(str(MAX_PERMITS))
# The longest name whose every permit key fits DynamoDB's partition key.
MAX_NAME_BYTES = MAX_PARTITION_KEY_BYTES - _LONGEST_SUFFIX_BYTES
"""The longest name (UTF-8 bytes) of a counted lock: every permit's key must fit DynamoDB's partition key."""


def permit_key(name: str, suffix: str, index: int) -> str:
    return f"{name}{suffix}{index}"


# The kind of set a suffix names, as listings and metrics call it.
KINDS = {SEMAPHORE_SUFFIX: "semaphore", READER_SUFFIX: "read"}


def split_permit_key(key: str) -> tuple[str, str, int] | None:
    """``(name, kind, index)`` of a permit's key (kind ``"semaphore"`` or ``"read"``), None for any other key."""
    match = _PERMIT_KEY.fullmatch(key)
    if match is None:
        return None
    return match["name"], KINDS[match["suffix"]], int(match["index"])


def check_set(kind: str, name: object, count: object, limit: int) -> None:
    """A set's name and permit count, each error naming the fix."""
    if not isinstance(name, str) or not name:
        raise InvalidLockRequest(f"A {kind}'s name must be a non-empty string, not {name!r}.")
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > MAX_NAME_BYTES:
        raise InvalidLockRequest(
            f"A {kind}'s name is {size} bytes in UTF-8, over the {MAX_NAME_BYTES} bytes that leave room for "
            "its permits' suffix in DynamoDB's 2048-byte key; use a shorter name (for example a hash of it)."
        )
    if split_permit_key(name) is not None:
        raise InvalidLockRequest(
            f"A {kind}'s name must not end like a permit's key ({SEMAPHORE_SUFFIX}N or {READER_SUFFIX}N): "
            f"{name!r} would share items with another set; choose another name."
        )
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= limit:
        raise InvalidLockRequest(
            f"A {kind}'s count of permits must be a whole number from 1 to {limit} (one BatchGetItem reads "
            f"them all), not {count!r}."
        )


def other_count(lock: LockInfo, count: int) -> str | None:
    """The count ``lock``'s item states when it is not ``count`` ("3 permits", "an unreadable count"); else None.

    An item without the attribute is a plain lock's (or the Java client's) on a permit's key: it
    holds that permit, whatever the set's count.
    """
    if lock.permits == count or (lock.permits is None and not any(PERMITS in problem for problem in lock.problems)):
        return None
    return "an unreadable count" if lock.permits is None else f"{lock.permits} permits"


def count_refused(what: str, stored: str, key: str, count: int, *, holder: LockInfo | None = None) -> CountInUse:
    """The error of a call asking for ``count`` where an item of the set (``key``) states another, held."""
    return CountInUse(
        f"The {what} has {stored} (as stored on its item {printable(key)!r}, held), but this call asks for "
        f"{count}. The count is part of the name's contract while a permit is held: pass the stored count "
        "everywhere, wait until its holders are gone (a new count takes over once no permit is held), or use a "
        "new name for the new count.",
        holder,
    )


def shut(
    layout: TableLayout,
    lock_id: LockId,
    current: LockInfo | None,
    *,
    owner_name: str,
    lease_duration: float,
    now: float,
) -> dict[str, Any]:
    """The holder of a set's name shuts a permit nobody holds: a new record version, released, as read or not at all.

    ``current``: the permit's item as read (None: no item; it is created released, in the Java
    client's format, by ``owner_name`` with ``lease_duration``, with no token, so the next grant
    seeds one), released or silent for a lease. ``now``: the wall clock, for the TTL.
    A round that read the permit before and writes it after is refused (its condition names the
    old version, or no item): it reads again and finds the name held (counted/name_lock.py).
    """
    exprs = Expressions()
    sets = [
        f"{exprs.name(item.RECORD_VERSION_NUMBER)} = {exprs.string(str(uuid.uuid4()))}",
        conditions.released(exprs),
    ]
    if current is None:
        sets += [
            f"{exprs.name(item.OWNER_NAME)} = {exprs.string(owner_name)}",
            f"{exprs.name(item.LEASE_DURATION)} = {exprs.string(str(round(lease_duration * 1000)))}",
        ]
        if layout.ttl_attribute:
            sets.append(f"{exprs.name(layout.ttl_attribute)} = {exprs.number(layout.ttl_seconds(now, 0))}")
        condition = f"attribute_not_exists({exprs.name(layout.partition_key_name)})"
    else:
        condition = conditions.version_is(exprs, current.raw_version)
    return {
        "TableName": layout.table_name,
        "Key": layout.key(lock_id),
        "UpdateExpression": update_expression(sets, [exprs.name(item.LIVE_LOCK_KEY)]),
        "ConditionExpression": condition,
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        **exprs.params(),
    }
