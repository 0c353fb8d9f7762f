"""Asking to edit: the queue of users waiting for an object's edit lock, and whose turn it is when it frees.

The queue is stored on the lock item (the protocol's ``join_queue``), one
entry per user. A waiting page keeps its user's entry fresh with every poll
(``refresh_waiter``, which also says who holds the lock); an entry not
refreshed for :data:`LIVE_SECONDS`, by the clock of the server reading it,
is gone. When the lock is free, only the first live waiter may take it: the
page of that waiter takes it at its next poll, and anyone else who opens the
page lets it go again at once (:meth:`.EditLock.open`). Taking over with the
force-release permission jumps the queue.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from django.core.checks import CheckMessage, Warning
from django.utils import dateformat, timezone
from django.utils.translation import gettext as _

from ...client import get_client
from ...dynamodb import LockInfo, LockNotAcquired, Waiter, span_event
from ...keys import telemetry_attributes
from .tickets import EditTicket, django_user_id

if TYPE_CHECKING:
    from .object_locks import EditLock

# The protocol's window (3 minutes), which its writes prune by: generous beside a page's poll
# (every few seconds; about once a minute in a hidden tab), so a waiter's entry outlives a slow
# poll and a wall clock a few seconds off; a page closed without a word drops out after it.
LIVE_SECONDS = Waiter.LIVE_SECONDS


# A page's poll period, at most: a third of the window, so that a hidden tab (whose timers the
# browser wakes about once a minute) still polls about two minutes apart at worst, inside it.
MAX_POLL_SECONDS = LIVE_SECONDS / 3


def poll_period_problems(model_admin: Any) -> list[CheckMessage]:
    """System check ``dynalock.W004``: the admin's ``edit_lock_poll_seconds`` keeps its waiters live."""
    period = model_admin.edit_lock_poll_seconds
    if isinstance(period, int | float) and not isinstance(period, bool) and 0 < period <= MAX_POLL_SECONDS:
        return []
    return [
        Warning(
            f"{type(model_admin).__name__}.edit_lock_poll_seconds is {period!r}: a waiting page must poll "
            f"well inside the {LIVE_SECONDS:g} s a waiter stays in line after its last poll, or it loses "
            "its turn (and every page polls for the lock's release that slowly).",
            hint=f"Use a number of seconds above 0 and at most {MAX_POLL_SECONDS:g} (the default is 3).",
            obj=model_admin,
            id="dynalock.W004",
        )
    ]


def waiter_id(user: Any) -> str:
    """A user's entry in a queue: one per user, whichever of their tabs asked."""
    return django_user_id(user)


def live_waiters(waiters: Sequence[Waiter], now: float) -> list[Waiter]:
    """The waiters whose page refreshed their entry within :data:`LIVE_SECONDS` of ``now``, first asked first."""
    return [waiter for waiter in waiters if waiter.is_live(now)]


def next_in_line(waiters: Sequence[Waiter], user: Any) -> Waiter | None:
    """The first live waiter, if it is someone other than ``user``: the one a free lock is kept for."""
    waiting = live_waiters(waiters, time.time())
    return waiting[0] if waiting and waiting[0].waiter_id != waiter_id(user) else None


def waiting_message(waiters: Sequence[Waiter], holder: Any) -> str:
    """What the holder's page says of who waits ("" for nobody), from the waiters its renewal returned."""
    others = [waiter for waiter in live_waiters(waiters, time.time()) if waiter.waiter_id != waiter_id(holder)]
    if not others:
        return ""
    first, *rest = others
    message = _("%(name)s is waiting to edit since %(since)s.") % {"name": first.name, "since": _clock(first.since)}
    if rest:
        message += " " + _("Then: %(names)s.") % {"names": ", ".join(waiter.name for waiter in rest)}
    return message


@dataclass(frozen=True)
class Turn:
    """What asking, or waiting, came to for one page."""

    # taken: the page holds the lock now (``ticket``); waiting: in line; dropped: not in line (it left,
    # went silent and was taken out, the queue is full, or someone else took the lock first)
    state: Literal["taken", "waiting", "dropped"]
    message: str = ""
    ticket: EditTicket | None = None


def ask(edit_lock: EditLock) -> Turn:
    """Put the user in line for the lock (one request); take it instead when it is free and theirs to take."""
    user = edit_lock.user
    span_event("dynalock.edit.ask", telemetry_attributes(edit_lock.key))
    current = get_client().join_queue(edit_lock.key, waiter_id(user), name=user.get_username() or str(user.pk))
    return _turn(edit_lock, current, asked=True)


def wait(edit_lock: EditLock) -> Turn:
    """A waiting page's poll: keep the user in line (one request); their turn takes the lock (one more)."""
    current = get_client().refresh_waiter(edit_lock.key, waiter_id(edit_lock.user))
    return _turn(edit_lock, current, asked=False)


def leave(edit_lock: EditLock) -> None:
    """The user's waiting page went away: out of the line (one request)."""
    get_client().leave_queue(edit_lock.key, waiter_id(edit_lock.user))


def _turn(edit_lock: EditLock, current: LockInfo | None, *, asked: bool) -> Turn:
    me = waiter_id(edit_lock.user)
    in_line = current is not None and any(waiter.waiter_id == me for waiter in current.waiters)
    if current is not None and not edit_lock.is_free(current):
        if in_line:
            return Turn("waiting", _place(current, me, edit_lock.held_by(current).holder_name))
        return Turn("dropped", _("The queue for this is full.") if asked else "")
    ahead = next_in_line(current.waiters if current is not None else (), edit_lock.user)
    if ahead is not None:
        return Turn("waiting" if in_line else "dropped", kept_for_message(ahead.name))
    if current is None:  # nobody holds it, and there is no queue: as if the page were opened now
        state = edit_lock.open()
    else:
        now = time.time()
        live = live_waiters(current.waiters, now)
        gone = [waiter.waiter_id for waiter in current.waiters if waiter not in live and waiter.waiter_id != me]
        try:
            state = edit_lock.take_over(current, dequeue=([me] if in_line else []) + gone, unchanged=True)
        except LockNotAcquired:
            return Turn("waiting" if in_line else "dropped")  # someone was quicker: the next poll sees who
        span_event("dynalock.edit.hand_over", telemetry_attributes(edit_lock.key))
    if state.ticket is None:
        return Turn("dropped", kept_for_message(state.next_in_line) if state.next_in_line else "")
    return Turn("taken", _("It is your turn: this page now edits."), state.ticket)


def _place(current: LockInfo, me: str, holder: str) -> str:
    mine = [waiter.waiter_id for waiter in current.waiters].index(me)
    ahead = live_waiters(current.waiters[:mine], time.time())
    if not ahead:
        place = _("You are next: this page switches to editing by itself when %(holder)s lets go. Keep it open.")
    else:
        place = _(
            "%(holder)s is editing this. You are in line after %(names)s: this page switches to editing by itself "
            "at your turn."
        )
    return place % {"holder": holder, "names": ", ".join(waiter.name for waiter in ahead)}


def kept_for_message(name: str) -> str:
    """What a page that may not take a free lock says: it is kept for the first live waiter."""
    return _("Nobody is editing this now: %(name)s asked to edit first and gets it in a moment.") % {"name": name}


def _clock(epoch_seconds: float) -> str:
    """A waiter's wall-clock time (display only; any number read from the table) in the current time zone."""
    try:  # localtime too: a moment near the end of year 9999 overflows east of UTC
        return dateformat.format(timezone.localtime(datetime.fromtimestamp(epoch_seconds, tz=UTC)), "H:i")
    except (OverflowError, OSError, ValueError):
        return "?"
