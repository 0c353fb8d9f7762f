"""Asking to edit, for one page: join the line, keep a place in it, leave it, and take the lock at one's turn.

The queue's rules (who is live, who is next, what people are told) are
:mod:`.edit_queue`'s; this module acts on them for one user's page through
its :class:`~.object_locks.EditLock`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from django.utils.translation import gettext as _

from ...client import get_client, wall_now
from ...dynamodb import LockInfo, LockNotAcquired, span_event
from ...keys import telemetry_attributes
from .edit_queue import kept_for_message, live_waiters, next_in_line, waiter_id
from .object_locks import EditLock
from .tickets import EditTicket


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
        now = wall_now().timestamp()
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
    ahead = live_waiters(current.waiters[:mine], wall_now().timestamp())
    if not ahead:
        place = _("You are next: this page switches to editing by itself when %(holder)s lets go. Keep it open.")
    else:
        place = _(
            "%(holder)s is editing this. You are in line after %(names)s: this page switches to editing by itself "
            "at your turn."
        )
    return place % {"holder": holder, "names": ", ".join(waiter.name for waiter in ahead)}
