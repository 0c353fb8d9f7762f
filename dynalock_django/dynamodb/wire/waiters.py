"""A lock's queue of waiters, as stored on its item: who asked for the lock next, since when, last seen when.

One map attribute, ``waiters``: waiter id → ``{"name": S, "since": N, "seen": N}``
(epoch milliseconds on the writer's wall clock). It lives on the lock item so
that a renewal can return it at no extra request. The AWS Java client drops it
when it writes the item with PutItem: its locks simply have no queue.

An entry not refreshed for :data:`LIVE_SECONDS` (by the reader's wall clock)
is no longer in line. Anything read here may have been written by someone
else: an entry that is not well-formed is skipped, and names are cut to
:data:`MAX_NAME_CHARS`. Entries that hold no live waiter (:func:`stale_entries`)
are taken out by the writes that read them (:mod:`.queue_pruning`).

Code waiting in ``acquire`` keeps a line of its own beside it, ``line``, with
the same entries and rules and a short window of its own (the acquiring
wing's :mod:`.line_seats` says how short): one entry per waiting process, and
:func:`place_in_line` tells a waiter whether anyone live stands before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

WAITERS = "waiters"
# The line of processes waiting in ``acquire``: the same entries, one per process (see :func:`place_in_line`).
LINE = "line"
NAME = "name"
SINCE = "since"
SEEN = "seen"
# Milliseconds an entry stays in line after ``seen``, on a line entry only: each waiter says its own, as
# it refreshes at a pace of its own. At most LIVE_SECONDS, so no entry holds a place for longer.
WINDOW = "window"

# The queue's length: an ask is refused beyond it. It bounds the item's size
# (:func:`largest_queue` is counted in the data budget) and what every renewal returns.
MAX_WAITERS = 20
MAX_WAITER_ID_BYTES = 200
MAX_NAME_CHARS = 150
# How long an entry stays in line after its waiter last refreshed it. A waiting page polls every
# few seconds, but browsers wake a hidden tab's timers about once a minute: three minutes keep a
# background tab in line through a late poll or two, and a wall clock a few seconds off. A page
# closed without a word (or a tab frozen by the browser) leaves the line when the window ends.
LIVE_SECONDS = 180.0

_DIGITS = re.compile(r"[0-9]{1,15}")


@dataclass(frozen=True)
class Waiter:
    """One entry of a lock's queue. ``since`` and ``seen`` are epoch seconds on the waiter's wall clock."""

    LIVE_SECONDS: ClassVar[float] = LIVE_SECONDS

    waiter_id: str
    name: str
    since: float
    seen: float
    window: float = LIVE_SECONDS  # seconds it stays in line after ``seen`` (its own, or the queue's)

    def is_live(self, now: float) -> bool:
        """Refreshed within its window of ``now`` (epoch seconds, the reader's wall clock)."""
        # Either way: an entry "seen" far in the future (a hostile item, a clock far ahead) is no
        # waiter, or it would hold the line for ever.
        return abs(now - self.seen) <= self.window


@dataclass(frozen=True)
class Stale:
    """A queue entry that holds no live waiter, and what shows it, as stored.

    The entry is taken out only while that still holds (:func:`.queue_pruning.still_stale`):
    any join or refresh of the same waiter id makes it false, so a waiter who asked again,
    or whose page polled, between the read and the write stays in line.
    """

    waiter_id: str
    # The field (of the entry; None: the entry itself) that is not of type ``expected_type``,
    # or whose stored value is ``as_read`` (a number no join or refresh writes again).
    field: str | None = None
    expected_type: str | None = None
    as_read: Any = None


def parse_waiters(value: Any) -> tuple[Waiter, ...]:
    """The queue stored in ``value`` (a ``waiters`` attribute, or None), first asked first; never fails."""
    try:
        entries = value["M"].items()
    except (KeyError, TypeError, AttributeError):
        return ()
    return _first_asked_first(entries)[:MAX_WAITERS] if entries else ()  # most grants find nobody waiting


def _first_asked_first(entries: Any) -> tuple[Waiter, ...]:
    """Every well-formed entry of ``entries`` (a map's items), first asked first: none cut."""
    waiters = [waiter for waiter_id, entry in entries if (waiter := _waiter(waiter_id, entry)) is not None]
    return tuple(sorted(waiters, key=lambda waiter: (waiter.since, waiter.waiter_id)))


def stale_entries(value: Any, now: float) -> tuple[Stale, ...]:
    """The entries of the queue stored in ``value`` that are not well-formed, or not live at ``now``; never fails."""
    try:
        entries = value["M"].items()
    except (KeyError, TypeError, AttributeError):
        return ()
    return tuple(stale for waiter_id, stored in entries if (stale := _stale(waiter_id, stored, now)) is not None)


def entry(name: str, wall_ms: int, window: float | None = None) -> AttributeValueTypeDef:
    """A new entry, as stored: asked and seen now (``window``: a line entry's own, in seconds)."""
    now: AttributeValueTypeDef = {"N": str(wall_ms)}
    fields: dict[str, AttributeValueTypeDef] = {NAME: {"S": name[:MAX_NAME_CHARS]}, SINCE: now, SEEN: now}
    if window is not None:
        fields[WINDOW] = {"N": str(round(window * 1000))}
    return {"M": fields}


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
    return Waiter(waiter_id, name[:MAX_NAME_CHARS], int(since) / 1000.0, int(seen) / 1000.0, _window(fields))


def _window(fields: Any) -> float:
    """An entry's own window (a line entry's), at most :data:`LIVE_SECONDS`; the queue's when it has none."""
    stored = fields.get(WINDOW)
    text = stored.get("N") if isinstance(stored, dict) else None
    if not isinstance(text, str) or not _DIGITS.fullmatch(text):
        return LIVE_SECONDS
    return min(int(text) / 1000.0, LIVE_SECONDS)


def _stale(waiter_id: Any, stored: Any, now: float) -> Stale | None:
    if not isinstance(waiter_id, str):
        return None  # not a map key DynamoDB could have returned
    if len(waiter_id.encode("utf-8", "surrogatepass")) > MAX_WAITER_ID_BYTES:
        return Stale(waiter_id)  # no ask writes such an id: nothing to witness
    fields = stored.get("M") if isinstance(stored, dict) else None
    if not isinstance(fields, dict):
        return Stale(waiter_id, expected_type="M")
    for name, kind in ((NAME, "S"), (SINCE, "N"), (SEEN, "N")):
        field = fields.get(name)
        if not (isinstance(field, dict) and isinstance(field.get(kind), str)):
            return Stale(waiter_id, name, expected_type=kind)
    for name in (SINCE, SEEN):
        if not _DIGITS.fullmatch(fields[name]["N"]):
            return Stale(waiter_id, name, as_read=fields[name])
    parsed = _waiter(waiter_id, stored)
    if parsed is None or not parsed.is_live(now):
        return Stale(waiter_id, SEEN, as_read=fields[SEEN])
    return None


def largest_queue() -> AttributeValueTypeDef:
    """The largest queue an item can carry, as stored: for the item-size budget."""
    longest_name = "\U0001f600" * MAX_NAME_CHARS  # four bytes a character in UTF-8
    return {
        "M": {
            f"{number:0{MAX_WAITER_ID_BYTES}d}": entry(longest_name, 10**15 - 1, LIVE_SECONDS)
            for number in range(MAX_WAITERS)
        }
    }


@dataclass(frozen=True)
class Place:
    """Where one waiter (or an arrival, not in it) stands in a line as read: see :func:`place_in_line`."""

    joined: bool  # its own entry is there and live
    ahead: int  # live entries before it; for an arrival, every live entry
    stale: tuple[Stale, ...]  # entries that hold nobody's place: the write that takes the lock takes them out
    size: int  # entries as stored, live or not
    is_map: bool  # the line is a map (a join adds to it), or there is none, or it is not one (a join starts one)


NO_LINE = Place(joined=False, ahead=0, stale=(), size=0, is_map=False)


def place_in_line(value: Any, me: str | None, now: float) -> Place:
    """Where ``me`` (None: an arrival) stands in the line stored in ``value``, read at ``now``; never fails.

    First come, first served by ``since`` (the joiner's wall clock), then id. Own entry gone or
    gone stale: not joined, and behind every live entry, as an arrival is. Every live entry counts,
    however many stale ones (a hostile or foreign line may hold more than :data:`MAX_WAITERS`)
    joined before it.
    """
    try:
        entries = value["M"]
    except (KeyError, TypeError, AttributeError):
        return NO_LINE
    if not isinstance(entries, dict):
        return NO_LINE
    live = [waiter for waiter in _first_asked_first(entries.items()) if waiter.is_live(now)]
    mine = next((waiter for waiter in live if waiter.waiter_id == me), None)
    if mine is None:
        ahead = len(live)
    else:
        ahead = sum((waiter.since, waiter.waiter_id) < (mine.since, mine.waiter_id) for waiter in live)
    return Place(mine is not None, ahead, stale_entries(value, now), len(entries), True)
