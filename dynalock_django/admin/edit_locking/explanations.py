"""What staff are told about an edit lock: who edits since when, why a tab's lock is gone, why locks are unavailable."""

from __future__ import annotations

from django.utils import dateformat, timezone
from django.utils.translation import gettext as _

from ...dynamodb import DynamoDBError, LockInfo
from ..staff_messages import paused_message, staff_message
from .edit_queue import kept_for_message
from .object_locks import EditLock, EditState


def since(holder: LockInfo) -> str:
    """The holder's start, on its own wall clock (display only), in the current time zone."""
    if holder.acquired_at is None:
        return "?"
    return dateformat.format(timezone.localtime(holder.acquired_at), "H:i")


def held_message(state: EditState) -> str:
    """Why the page cannot edit: who holds the lock, or who it is kept for."""
    if state.holder is None:
        return kept_for_message(state.next_in_line or "?")
    if state.holder_is_me:
        message = _("You are editing this in another tab (since %(since)s).") % {"since": since(state.holder)}
    else:
        message = _("Being edited by %(holder)s since %(since)s.") % {
            "holder": state.holder_name,
            "since": since(state.holder),
        }
    if state.frees_at is None:
        return message
    frees_at = dateformat.format(timezone.localtime(state.frees_at), "H:i:s")
    return f"{message} {_('If that tab was closed, the lock frees at %(time)s.') % {'time': frees_at}}"


def unavailable_message(error: DynamoDBError) -> str:
    return paused_message(error) or (
        f"{_('Edit locks are unavailable, so nothing can be edited here for now.')} {staff_message(error)}"
    )


def outage_message() -> str:
    """A change page open for editing without its edit lock (EDIT_DURING_OUTAGE), while DynamoDB does not answer."""
    return _(
        "The lock service is not answering: you are editing without an edit lock, so someone else may be "
        "editing this too. Your save is recorded."
    )


def lost_message(edit_lock: EditLock, current: LockInfo | None) -> str:
    """Why a tab's lock is not its own any more, for the person in front of it."""
    if current is None or (current.is_released and not current.released_by):
        reason = _("Your edit lock ran out.")
    elif current.is_released:
        reason = _("%(user)s released your edit lock.") % {"user": current.released_by}
    elif edit_lock.is_mine(current):
        reason = _("You are editing this in another tab now.")
    else:
        holder = edit_lock.held_by(current)
        reason = _("%(holder)s took over editing at %(time)s.") % {
            "holder": holder.holder_name,
            "time": since(current),
        }
    return f"{reason} {_('This page can no longer save: copy your changes, then reload.')}"
