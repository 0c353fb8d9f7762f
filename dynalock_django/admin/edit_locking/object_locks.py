"""An object's edit lock, as one user's requests see it: locked for one browser tab, kept alive by the tab.

A change page takes the row's lock for the tab that shows it, and the tab
renews it through whichever server answers (``keep_alive=False`` leases of the
protocol): no server's heartbeat keeps a closed tab's lock alive, and it runs
out one ``EDIT_LEASE_DURATION`` after the tab stops renewing (at once, for a
tab gone longer than that plus ``MAX_CLOCK_SKEW``, when that is set). Which
tab holds it is told by its ticket (:mod:`.tickets`).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import models
from django.utils import timezone

from ... import keys
from ...client import get_client
from ...conf import dynalock_settings
from ...dynamodb import Lease, LockInfo, LockLost, LockNotAcquired, LockTimeout
from ...keys import key_for_instance
from ...live_lock_rows import holder_label
from ...models import VIEW_LOCK_PERMISSION
from ...payload import LockData
from . import edit_queue
from .tickets import EditTicket, is_users_tab, owner_name

PURPOSE = "edit"


@dataclass(frozen=True)
class EditState:
    """What one change page may do with its object's edit lock."""

    key: str
    ticket: EditTicket | None = None  # the lock this page holds (or held, if ``problem`` says it was lost)
    holder: LockInfo | None = None  # who holds it when this page does not
    holder_is_me: bool = False  # that holder is the same user, in another tab
    # When the holder's lock frees if it is not renewed from now on (this server's takeover rule and clock).
    frees_at: datetime | None = None
    problem: str | None = None  # why this page cannot save
    next_in_line: str | None = None  # the lock is free, but kept for this user, who asked first (edit_queue)
    unlocked: bool = False  # editable without the lock: DynamoDB did not answer, and EDIT_DURING_OUTAGE is on
    shows_hosts: bool = False  # the user may see the live-locks page: a holder that is code is named by host and pid

    @property
    def holder_data(self) -> LockData | None:
        return LockData.from_bytes(self.holder.data) if self.holder else None

    @property
    def holder_name(self) -> str:
        """Who holds the lock, for the user in front of the page (:func:`.live_lock_rows.holder_label`)."""
        return holder_label(self.holder, shows_hosts=self.shows_hosts) if self.holder else "?"


class EditLock:
    """The edit lock of one model instance, as one user's requests see it."""

    def __init__(self, instance: models.Model, user: Any) -> None:
        self.key = key_for_instance(instance)
        self.described = keys.described(self.key, "object", type(instance))  # how telemetry names it
        self.user = user

    def open(self, handoff: EditTicket | None = None) -> EditState:
        """Take the lock for a page being shown (one request), or carry it over from ``handoff``.

        ``handoff`` is the ticket of the page this tab showed just before (a
        reload, a save-and-continue). Its lock moves to the new page under a new
        ticket, so the release the old page sends as it unloads, which may
        arrive after this, finds nothing of its own to release.

        A lock that was free but kept for someone who asked to edit first (the
        queue the grant returns) is let go again at once (one more request).
        """
        if handoff is not None:
            current = self.read()
            if current is not None and self._is_held_by(current, handoff):
                try:
                    return self.take_over(current)
                except LockNotAcquired:
                    pass  # it changed hands since the read: ask for it like any page
        tab = secrets.token_urlsafe(16)
        try:
            lease = get_client().acquire(self.key, timeout=0, **self._grant_options(tab))
        except LockTimeout as busy:
            return self.held_by(busy.holder)
        first = edit_queue.next_in_line(lease.waiters, self.user)
        if first is not None:
            lease.release()
            return EditState(self.key, next_in_line=first.name)
        me = edit_queue.waiter_id(self.user)
        if any(waiter.waiter_id == me for waiter in lease.waiters):
            get_client().leave_queue(self.key, me)  # asked in another tab, and got it here
        return self._granted(lease, tab)

    def claim(self) -> EditState:
        """Take the lock for a request that changes the object without a page to edit it (a deletion).

        It gets the lock when nobody holds it, or from one of this user's own
        tabs (the change page the user just left may not have released it yet);
        otherwise the state says who holds it.
        """
        state = self.open()
        if state.ticket is not None or not state.holder_is_me or state.holder is None:
            return state
        try:
            return self.take_over(state.holder)
        except LockNotAcquired:
            return state  # it changed hands since: whoever has it now keeps it

    def renew(self, ticket: EditTicket) -> Lease:
        """Renew the tab's lock for another lease (one request); LockLost when it is not the tab's any more."""
        lease = self.lease(ticket)
        lease.extend(dynalock_settings.EDIT_LEASE_DURATION)
        return lease

    def release(self, ticket: EditTicket) -> bool:
        """Release the tab's lock (one request); LockLost when it is not the tab's any more."""
        return self.lease(ticket).release()

    def lease(self, ticket: EditTicket) -> Lease:
        """The handle of the ticket's lock (no request): its writes are refused once it is not the ticket's."""
        return get_client().lease(
            self.key,
            owner_name=owner_name(self.user, ticket.tab),
            fencing_token=ticket.fencing_token,
            lease_duration=dynalock_settings.EDIT_LEASE_DURATION,
        )

    def check(self, ticket: EditTicket) -> LockInfo:
        """The tab's lock as stored now (one read, no write); LockLost when it is not the tab's any more."""
        current = self.read()
        if current is None or not self._is_held_by(current, ticket):
            raise LockLost("the edit lock is not this tab's any more", current)
        return current

    def read(self) -> LockInfo | None:
        """The lock item as stored now (one consistent read)."""
        return get_client().get(self.key)

    def is_free(self, current: LockInfo | None) -> bool:
        """A page opened now would get the lock: nobody holds it, or its holder stopped renewing.

        ``current`` must come from :meth:`read`: the read is what starts this
        process's count of how long the holder has been silent.
        """
        return get_client().available_in(current) == 0

    def take_over(self, current: LockInfo, dequeue: Sequence[str] = (), *, unchanged: bool = False) -> EditState:
        """Take the lock from the holding ``current`` for a new tab of this user (one request).

        LockNotAcquired, and nothing changes, when the lock changed hands or
        was released since ``current`` was read. Whether this user may take it
        from that holder is the caller's decision. ``dequeue``: waiters of
        ``current`` the same write takes out of the queue; ``unchanged``: only if
        the item is exactly as read (a waiter's turn, never a holder's renewed lock).
        """
        tab = secrets.token_urlsafe(16)
        lease = get_client().take_over(current, dequeue=dequeue, unchanged=unchanged, **self._grant_options(tab))
        return self._granted(lease, tab)

    def held_by(self, holder: LockInfo | None) -> EditState:
        frees_at = None if holder is None else _from_now(get_client().available_in(holder))
        return EditState(
            self.key,
            holder=holder,
            holder_is_me=self.is_mine(holder),
            frees_at=frees_at,
            shows_hosts=self.user.has_perm(VIEW_LOCK_PERMISSION),
        )

    def is_mine(self, holder: LockInfo | None) -> bool:
        """The lock is held by one of this user's tabs."""
        return holder is not None and is_users_tab(holder.owner_name, self.user)

    def _is_held_by(self, current: LockInfo, ticket: EditTicket) -> bool:
        return (
            not current.is_released
            and current.owner_name == owner_name(self.user, ticket.tab)
            and current.fencing_token == ticket.fencing_token
        )

    def _grant_options(self, tab: str) -> dict[str, Any]:
        data = LockData(purpose=PURPOSE, user_id=str(self.user.pk), username=self.user.get_username(), tab=tab)
        return {
            "owner_name": owner_name(self.user, tab),
            "lease_duration": dynalock_settings.EDIT_LEASE_DURATION,
            "keep_alive": False,
            "data": data.to_bytes(),
            "described": self.described,
        }

    def _granted(self, lease: Lease, tab: str) -> EditState:
        return EditState(self.key, ticket=EditTicket(tab, lease.fencing_token))


def _from_now(seconds: float) -> datetime | None:
    """The moment ``seconds`` from now; None past what a calendar in any time zone can show (an endless lease)."""
    try:
        moment = timezone.now() + timedelta(seconds=seconds)
    except OverflowError:
        return None
    return moment if moment < datetime.max.replace(tzinfo=UTC) - timedelta(days=1) else None
