"""An object's edit lock taken for a write made without its change page: a deletion, a changelist row, an action.

It is held until the transaction the write runs in ends, commit or rollback,
so nobody opens the object to edit it before the write is visible.
"""

from __future__ import annotations

from typing import Any

from django.db import models, router

from ...dynamodb import DynamoDBError, Lease
from ...transactions import release_when_transaction_ends
from .explanations import held_message, unavailable_message
from .object_locks import EditLock


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
