"""The lock item: the AWS DynamoDB Lock Client's wire format, plus our extras.

A Java client and this one share a table, so attribute names, types and units
are exactly the Java client's: ``leaseDuration`` is milliseconds in a string,
``recordVersionNumber`` a string, ``data`` binary, ``isReleased`` the string
``"1"``. The Java client ignores the attributes it does not know, which is
where the fencing token, TTL and display timestamps live.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple, TypeGuard

from .waiters import LINE, WAITERS, Waiter, parse_waiters

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

    from ..clock import Clock

    Item = dict[str, AttributeValueTypeDef]
else:
    Item = dict[str, Any]

OWNER_NAME = "ownerName"
LEASE_DURATION = "leaseDuration"
RECORD_VERSION_NUMBER = "recordVersionNumber"
DATA = "data"
IS_RELEASED = "isReleased"
IS_RELEASED_VALUE = "1"

# Ours; the Java client carries them along as "additional attributes".
FENCING_TOKEN = "fencingToken"  # noqa: S105 (an attribute name, not a secret)
ACQUIRED_AT = "acquiredAt"  # epoch milliseconds, holder's wall clock, display only
RENEWED_AT = "renewedAt"  # idem
RELEASED_BY = "releasedBy"  # who forced a release, shown to the holder who lost it
# {"version": S, "ms": N}: the writer's wall clock (epoch ms) read before it sent the write that
# stored that record version. Tied to the version, because a Java client's heartbeat changes the
# version and leaves our attributes as they were: a stamp of another version says nothing.
SENT_AT = "sentAt"
SENT_AT_VERSION = "version"
SENT_AT_MS = "ms"
# The lock's key, present only while we hold it: the sparse live-locks index's key (see live_index.py).
LIVE_LOCK_KEY = "liveLockKey"
# On a counted lock's items only: how many permits its set has (see permits.py).
PERMITS = "permits"
# On a plain lock whose name has readers or permits: that they may hold, and the count of their set
# (the mark and its count: see readers_mark.py).
READERS_MAY_HOLD = "readersMayHold"
READERS_COUNT = "readersCount"

# DynamoDB's documented limits.
MAX_PARTITION_KEY_BYTES = 2048
"""DynamoDB's limit on a partition key's UTF-8 bytes: a longer lock key is refused before any request."""
MAX_SORT_KEY_BYTES = 1024
MAX_ITEM_BYTES = 400 * 1024

MALFORMED_ITEM_LEASE_SECONDS = 300.0
"""How long an item that cannot be parsed is presumed held.

Such an item may be a live lock written by a client this one does not understand, so it must not be
taken over quickly; a person can always clear it with a forced release.
"""

_DIGITS = re.compile(r"[0-9]{1,18}")

# Display-only times stay a day inside datetime's range, so any time zone can show them.
_EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
_LATEST = datetime(9999, 12, 30, tzinfo=UTC)


@dataclass(frozen=True)
class LockInfo:
    """A read-only snapshot of one lock item, as stored.

    ``lease_duration`` is in seconds. For a malformed item it is the safe
    default :data:`MALFORMED_ITEM_LEASE_SECONDS` and ``problems`` says what is
    wrong; such an item is treated as held by an unknown owner.
    ``acquired_at`` and ``renewed_at`` come from the holder's wall clock and
    are for display only. ``sent_at`` (epoch seconds on the holder's wall
    clock, read before it sent the write that stored this very version) is
    what the clock-bound takeover rule reads; None when the item has no such
    stamp, a malformed one, one of another version, or other problems.
    """

    key: str
    sort_key: str | None
    owner_name: str | None
    lease_duration: float
    record_version_number: str | None
    fencing_token: int | None
    data: bytes | None
    is_released: bool
    acquired_at: datetime | None
    renewed_at: datetime | None
    released_by: str | None
    problems: tuple[str, ...] = ()
    # A non-numeric fencingToken cannot be incremented: whoever takes this item
    # over must overwrite the token instead.
    bad_fencing_token: bool = False
    # The stored version exactly as DynamoDB returned it, whatever its type, so
    # a takeover can be conditioned on it even for a malformed item.
    raw_version: Any = field(default=None, repr=False, compare=False)
    sent_at: float | None = None
    # Who asked for the lock next, first asked first (see waiters.py); empty for items without a queue.
    waiters: tuple[Waiter, ...] = ()
    # The ``waiters`` attribute as stored (None: none), whatever its shape, so that a writer
    # can take out the entries it finds stale (:func:`.waiters.stale_entries`).
    raw_waiters: Any = field(default=None, repr=False, compare=False)
    # A permit of a counted lock: how many permits its set has (None: a plain lock's item).
    permits: int | None = None
    # The line of processes waiting in ``acquire`` as stored (None: none), whatever its shape (see waiters.py).
    raw_line: Any = field(default=None, repr=False, compare=False)
    # The count stored with a mark that readers or permits of this name may hold (readers_mark.py): None when
    # the item carries no mark, 0 when its count is missing or unreadable.
    marked_count: int | None = None

    @property
    def is_malformed(self) -> bool:
        return bool(self.problems)


def parse_item(item: Item, partition_key_name: str, sort_key_name: str | None) -> LockInfo:
    """Read a lock item, never failing: what cannot be read goes to ``problems``."""
    problems: list[str] = []

    def string(name: str, *, required: bool) -> str | None:
        value = item.get(name)
        if value is None:
            if required:
                problems.append(f"{name} is missing")
            return None
        if "S" not in value:
            problems.append(f"{name} is not a string (type {_type_of(value)})")
            return None
        return str(value["S"])

    key = string(partition_key_name, required=True) or ""
    sort_key = string(sort_key_name, required=True) if sort_key_name else None
    owner_name = string(OWNER_NAME, required=True)
    version = string(RECORD_VERSION_NUMBER, required=True)

    lease_duration = MALFORMED_ITEM_LEASE_SECONDS
    lease_text = string(LEASE_DURATION, required=True)
    if lease_text is not None:
        if _DIGITS.fullmatch(lease_text):
            lease_duration = int(lease_text) / 1000.0
        else:
            problems.append(f"{LEASE_DURATION} {lease_text[:40]!r} is not a whole number of milliseconds")

    data: bytes | None = None
    if DATA in item:
        if "B" in item[DATA]:
            data = bytes(item[DATA]["B"])
        else:
            problems.append(f"{DATA} is not binary (type {_type_of(item[DATA])})")

    released_text = string(IS_RELEASED, required=False)
    is_released = released_text == IS_RELEASED_VALUE
    if released_text is not None and not is_released:
        problems.append(f"{IS_RELEASED} is {released_text[:40]!r}, expected {IS_RELEASED_VALUE!r}")

    fencing_token = _number(item, FENCING_TOKEN, problems)
    permits = _number(item, PERMITS, problems)
    if problems:
        # Whatever the item says about its lease cannot be trusted. A release
        # mark stays authoritative: every client, Java's too, treats it as free.
        lease_duration = MALFORMED_ITEM_LEASE_SECONDS

    return LockInfo(
        key=key,
        sort_key=sort_key,
        owner_name=owner_name,
        lease_duration=lease_duration,
        record_version_number=version,
        fencing_token=fencing_token,
        data=data,
        is_released=is_released,
        acquired_at=_timestamp(item, ACQUIRED_AT),
        renewed_at=_timestamp(item, RENEWED_AT),
        released_by=string(RELEASED_BY, required=False),
        problems=tuple(problems),
        bad_fencing_token=FENCING_TOKEN in item and fencing_token is None,
        raw_version=item.get(RECORD_VERSION_NUMBER),
        sent_at=None if problems else _sent_at(item, version),
        waiters=parse_waiters(item.get(WAITERS)),
        raw_waiters=item.get(WAITERS),
        permits=permits,
        raw_line=item.get(LINE),
        marked_count=_marked_count(item),
    )


def _marked_count(item: Item) -> int | None:
    """The count stored with the readers' mark; 0 for a mark whose count cannot be read (hostile, malformed)."""
    if READERS_MAY_HOLD not in item:
        return None
    stored = item.get(READERS_COUNT)
    text = stored.get("N") if isinstance(stored, dict) else None
    if not isinstance(text, str) or not text.isdigit() or len(text) > 3:
        return 0
    return int(text)


def describe_holder(holder: LockInfo | None) -> str:
    """Who holds a lock, for messages."""
    if holder is None:
        return "holder unknown"
    if holder.is_malformed:
        return f"held by an unreadable item ({'; '.join(holder.problems)})"
    return f"held by {holder.owner_name!r} (lease {holder.lease_duration:g}s, token {holder.fencing_token})"


def _type_of(value: Any) -> str:
    return next(iter(value), "?") if isinstance(value, dict) else type(value).__name__


def _number(item: Item, name: str, problems: list[str]) -> int | None:
    value = item.get(name)
    if value is None:
        return None
    try:
        return int(value["N"])
    except (KeyError, TypeError, ValueError):
        problems.append(f"{name} is not a whole number")
        return None


def _timestamp(item: Item, name: str) -> datetime | None:
    """Display-only attributes: a bad or out-of-range value is shown as unknown, not as a problem."""
    try:
        moment = datetime.fromtimestamp(int(item[name]["N"]) / 1000.0, tz=UTC)
    except (KeyError, TypeError, ValueError, OverflowError, OSError):
        return None
    return moment if _EARLIEST <= moment <= _LATEST else None


def _sent_at(item: Item, version: str | None) -> float | None:
    """The stamp of the write that stored ``version``; anything else (absent, malformed, stale) is no stamp."""
    try:
        stamp = item[SENT_AT]["M"]
        if version is None or stamp[SENT_AT_VERSION]["S"] != version:
            return None
        ms = stamp[SENT_AT_MS]["N"]
    except (KeyError, TypeError):
        return None
    if not isinstance(ms, str) or not _DIGITS.fullmatch(ms):
        return None
    return int(ms) / 1000.0


def item_size(item: Item) -> int:
    """An upper bound of DynamoDB's item size for the attributes we write."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def _value_size(value: AttributeValueTypeDef) -> int:
    if "S" in value:
        return len(value["S"].encode())
    if "B" in value:
        return len(value["B"])
    if "N" in value:
        return len(value["N"]) // 2 + 2
    if "M" in value:
        return 3 + sum(len(name.encode()) + 1 + _value_size(inner) for name, inner in value["M"].items())
    return 1


class GrantAnswer(NamedTuple):
    """What DynamoDB answered a grant: the item the write left (``ALL_NEW``), as a counted lock's writer reads it.

    Kept raw: only a readers-writer lock's writer looks into it (readers_mark.py), so a plain grant parses nothing.
    """

    item: Item
    wall_ms: int  # the wall clock the grant's stamp carried (a seeded token tells the item had no token of ours)
    taken_over: bool


class Stamp(NamedTuple):
    """What one write stamps on the item: the writer, a new record version, the lease and the time.

    A named tuple, not a frozen dataclass: two are made a lock, and a frozen dataclass sets each field
    through ``object.__setattr__`` (four times the cost).
    """

    owner_name: str
    version: str
    lease_duration: float
    # The writer's monotonic clock when it is about to send: a lease this write wins or renews counts from here.
    started: float
    # The writer's wall clock, read after ``started`` and before sending, so it is never earlier than
    # the moment the lease counts from: ``sentAt`` (the clock-bound takeover rule), display timestamps,
    # the TTL and the token seed.
    wall_time: float

    @classmethod
    def new(cls, owner_name: str, lease_duration: float, clock: Clock) -> Stamp:
        started = clock.monotonic()
        return cls(owner_name, new_version(), lease_duration, started, clock.time())

    @property
    def wall_ms(self) -> int:
        return int(self.wall_time * 1000)

    def landed_in(self, current: LockInfo | None) -> TypeGuard[LockInfo]:
        """``current`` carries this very stamp: an earlier try of the write (retried inside botocore) landed."""
        return current is not None and current.raw_version == {"S": self.version}


def new_version() -> str:
    """A record version number: a new random UUID at every write, as the Java client writes them.

    ``str(uuid.uuid4())``, written out here: 16 random bytes, the version (4) and variant (RFC 4122)
    bits set, for a third of what building a ``uuid.UUID`` costs (two a lock, an acquire and a release).
    """
    digits = os.urandom(16).hex()
    return f"{digits[:8]}-{digits[8:12]}-4{digits[13:16]}-{_VARIANT[digits[16]]}{digits[17:20]}-{digits[20:]}"


# A UUID's 17th hex digit with the variant bits (10xx) set over its two random bits.
_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


def sent_at(version: str, wall_ms: int) -> AttributeValueTypeDef:
    """The ``sentAt`` attribute of a write that stores ``version`` (see :data:`SENT_AT`)."""
    return {"M": {SENT_AT_VERSION: {"S": version}, SENT_AT_MS: {"N": str(wall_ms)}}}
