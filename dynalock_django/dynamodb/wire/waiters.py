"""A lock's queue of waiters, as stored on its item: who asked for the lock next, since when, last seen when.

One map attribute, ``waiters``: waiter id → ``{"name": S, "since": N, "seen": N}``
(epoch milliseconds on the writer's wall clock). It lives on the lock item so
that a renewal can return it at no extra request. The AWS Java client drops it
when it writes the item with PutItem: its locks simply have no queue.

Anything read here may have been written by someone else: an entry that is
not a well-formed map is skipped, and names are cut to :data:`MAX_NAME_CHARS`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

WAITERS = "waiters"
NAME = "name"
SINCE = "since"
SEEN = "seen"

# The queue's length: an ask is refused beyond it. It bounds the item's size
# (:func:`largest_queue` is counted in the data budget) and what every renewal returns.
MAX_WAITERS = 20
MAX_WAITER_ID_BYTES = 200
MAX_NAME_CHARS = 150

_DIGITS = re.compile(r"[0-9]{1,15}")


@dataclass(frozen=True)
class Waiter:
    """One entry of a lock's queue. ``since`` and ``seen`` are epoch seconds on the waiter's wall clock."""

    waiter_id: str
    name: str
    since: float
    seen: float


def parse_waiters(value: Any) -> tuple[Waiter, ...]:
    """The queue stored in ``value`` (a ``waiters`` attribute, or None), first asked first; never fails."""
    try:
        entries = value["M"].items()
    except (KeyError, TypeError, AttributeError):
        return ()
    waiters = [waiter for waiter_id, entry in entries if (waiter := _waiter(waiter_id, entry)) is not None]
    return tuple(sorted(waiters, key=lambda waiter: (waiter.since, waiter.waiter_id)))[:MAX_WAITERS]


def entry(name: str, wall_ms: int) -> AttributeValueTypeDef:
    """A new entry, as stored: asked and seen now."""
    now = {"N": str(wall_ms)}
    return {"M": {NAME: {"S": name[:MAX_NAME_CHARS]}, SINCE: now, SEEN: now}}


def _waiter(waiter_id: Any, stored: Any) -> Waiter | None:
    try:
        fields = stored["M"]
        name, since, seen = fields[NAME]["S"], fields[SINCE]["N"], fields[SEEN]["N"]
    except (KeyError, TypeError):
        return None
    if not all(isinstance(text, str) for text in (waiter_id, name, since, seen)):
        return None
    if not (_DIGITS.fullmatch(since) and _DIGITS.fullmatch(seen)):
        return None
    if len(waiter_id.encode("utf-8", "surrogatepass")) > MAX_WAITER_ID_BYTES:
        return None
    return Waiter(waiter_id, name[:MAX_NAME_CHARS], int(since) / 1000.0, int(seen) / 1000.0)


def largest_queue() -> AttributeValueTypeDef:
    """The largest queue an item can carry, as stored: for the item-size budget."""
    longest_name = "\U0001f600" * MAX_NAME_CHARS  # four bytes a character in UTF-8
    return {
        "M": {f"{number:0{MAX_WAITER_ID_BYTES}d}": entry(longest_name, 10**15 - 1) for number in range(MAX_WAITERS)}
    }
