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

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from django.core.checks import CheckMessage, Warning
from django.utils import dateformat, timezone
from django.utils.translation import gettext as _

from ...client import wall_now
from ...dynamodb import Waiter
from .tickets import django_user_id

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
    waiting = live_waiters(waiters, wall_now().timestamp())
    return waiting[0] if waiting and waiting[0].waiter_id != waiter_id(user) else None


def waiting_message(waiters: Sequence[Waiter], holder: Any) -> str:
    """What the holder's page says of who waits ("" for nobody), from the waiters its renewal returned."""
    live = live_waiters(waiters, wall_now().timestamp())
    others = [waiter for waiter in live if waiter.waiter_id != waiter_id(holder)]
    if not others:
        return ""
    first, *rest = others
    message = _("%(name)s is waiting to edit since %(since)s.") % {"name": first.name, "since": _clock(first.since)}
    if rest:
        message += " " + _("Then: %(names)s.") % {"names": ", ".join(waiter.name for waiter in rest)}
    return message


def kept_for_message(name: str) -> str:
    """What a page that may not take a free lock says: it is kept for the first live waiter."""
    return _("Nobody is editing this now: %(name)s asked to edit first and gets it in a moment.") % {"name": name}


def _clock(epoch_seconds: float) -> str:
    """A waiter's wall-clock time (display only; any number read from the table) in the current time zone."""
    try:  # localtime too: a moment near the end of year 9999 overflows east of UTC
        return dateformat.format(timezone.localtime(datetime.fromtimestamp(epoch_seconds, tz=UTC)), "H:i")
    except (OverflowError, OSError, ValueError):
        return "?"
