"""Edit locks taken for a write made without a change page: a deletion, a changelist row, an action.

They are held until the transaction the write runs in ends, commit or
rollback, so nobody opens an object to edit it before the write is visible.
:func:`claim` takes one object's; :func:`claim_all` takes many objects' at
once, all or none, in two requests per 100 objects (``acquire_many``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import models, router

from ...client import get_client
from ...dynamodb import Described, DynamoDBError, Lease, LeaseGroup, LockInfo, LockNotAcquired, LockTimeout
from ...keys import described_as_read, key_for_instance, model_label
from ...payload import LockData
from ...transactions import release_when_transaction_ends
from . import edit_queue
from .edit_queue import kept_for_message
from .explanations import held_message, unavailable_message
from .object_locks import PURPOSE, EditLock


def claim(obj: models.Model, user: Any) -> tuple[Lease | None, str | None]:
    """``obj``'s edit lock for ``user``, held until the current transaction ends; or why it cannot be had."""
    edit_lock = EditLock(obj, user)
    try:
        state = edit_lock.claim()
    except DynamoDBError as error:
        return None, unavailable_message(error)
    if state.ticket is None:
        return None, held_message(state)
    lease = edit_lock.lease(state.ticket)
    release_when_transaction_ends(lease, router.db_for_write(type(obj)))
    return lease, None


@dataclass(frozen=True)
class Refusal:
    """Why the edit locks of a set of objects could not be had: who edits which, or that locks are unavailable."""

    held: list[tuple[models.Model, str]]  # each object someone edits, and who
    unavailable: str | None = None


def claim_all(objects: Sequence[models.Model], user: Any) -> LeaseGroup | Refusal:
    """The edit locks of all ``objects`` for ``user``, held until the current transaction ends; or why not.

    Two requests per 100 objects when they are free. An object the user
    edits in another tab (whose page may not have said goodbye yet) is
    released from that tab and the whole set asked for once more, as
    :meth:`EditLock.claim` does for one. A free lock kept for someone who
    asked to edit first refuses the set too, as it refuses a change page.
    """
    by_key = {key_for_instance(obj): obj for obj in objects}
    try:
        found = _try(by_key, user)
        if isinstance(found, dict) and all(EditLock(by_key[k], user).is_mine(held) for k, held in found.items()):
            for holder in found.values():
                _release_own(holder, user)
            found = _try(by_key, user)
    except DynamoDBError as error:
        return Refusal([], unavailable_message(error))
    if isinstance(found, LeaseGroup):
        using = router.db_for_write(type(objects[0]))
        kept = _kept_for_others(found, by_key, user, using)
        if kept is not None:
            return kept
        release_when_transaction_ends(found, using)
        return found
    return Refusal(
        [(by_key[key], held_message(EditLock(by_key[key], user).held_by(holder))) for key, holder in found.items()]
    )


def _kept_for_others(
    group: LeaseGroup, by_key: dict[str, models.Model], user: Any, using: str | None
) -> Refusal | None:
    """The objects whose free lock is kept for someone who asked to edit first, as :meth:`EditLock.open` keeps it.

    Then the whole group is let go again at once (one more request per 100),
    and nothing is done: a free lock with a live waiter ahead is the waiter's.
    Else None, and the user leaves the queues they had joined in another tab.
    """
    kept = [
        (by_key[lease.key], kept_for_message(first.name))
        for lease in group
        if (first := edit_queue.next_in_line(lease.waiters, user)) is not None
    ]
    if kept:
        try:
            group.release(best_effort=True)
        except DynamoDBError:
            release_when_transaction_ends(group, using)  # tried again then: never left held by the heartbeat
        return Refusal(kept)
    me = edit_queue.waiter_id(user)
    for lease in group:
        if any(waiter.waiter_id == me for waiter in lease.waiters):
            # Asked in another tab, and got it here. Housekeeping only: an entry left behind goes stale
            # and is pruned, while a failure here must not leave the group unreleased.
            with contextlib.suppress(DynamoDBError):
                get_client().leave_queue(lease.key, me)
    return None


def _try(by_key: dict[str, models.Model], user: Any) -> LeaseGroup | dict[str, LockInfo]:
    """One attempt at the whole set: the group, or who holds which of its keys."""
    data = LockData(purpose=PURPOSE, user_id=str(user.pk), username=user.get_username())
    try:
        labels = {model_label(type(row)) for row in by_key.values()}
        described = Described("object", labels.pop() if len(labels) == 1 else None)  # a group's: no key
        return get_client().acquire_many(list(by_key), timeout=0, data=data.to_bytes(), described=described)
    except LockTimeout as busy:
        return {holder.key: holder for holder in busy.holders if holder is not None}


def _release_own(holder: LockInfo, user: Any) -> None:
    with contextlib.suppress(LockNotAcquired):  # it changed hands since: the next attempt says who has it now
        get_client().force_release(holder, released_by=user.get_username(), described=described_as_read(holder.key))
