"""LockClient's completion records (a base class of LockClient): finish a lease with a value kept beside its lock.

A holder that finished its work calls :meth:`RecordMethods.complete`: its
lock is released and, in the same all-or-none write, the value is stored in
an item beside the lock's (``<key>#result``, :mod:`.records.record_item`) for
``keep_for`` seconds. Anyone reads it with :meth:`RecordMethods.get_record`,
one GetItem. Idempotency keys are built on these (``dynalock_django.idempotent``).
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

from .exceptions import InvalidLockRequest
from .records import record_item
from .records.completion import Completion

if TYPE_CHECKING:
    from .aws.store import LockStore
    from .clock import Clock
    from .leases.lease import Lease
    from .options import CallChecks
    from .process_state import ProcessState
    from .records.record_item import CompletionRecord
    from .wire.layout import TableLayout


class RecordMethods:
    """Completing a lease with a record, and reading records; the client provides its store, checks and state."""

    call_checks: CallChecks
    process_state: ProcessState
    store: LockStore
    layout: TableLayout
    clock: Clock

    def complete(self, lease: Lease, value: bytes, *, keep_for: float) -> None:
        """Release ``lease`` and store ``value`` beside its lock for ``keep_for`` seconds, all or none.

        Only the live holder completes: LockLost (nothing stored) when the
        lease ran out, was taken over or released, or a later holder's
        record is already there. One TransactWriteItems (on a store without
        transactions, an UpdateItem then the release: see docs/protocol.md).
        When DynamoDB does not answer, DynamoDBError is raised and the lease
        is left as it was: release it (its release finds out what landed).
        """
        if not isinstance(value, bytes):
            raise InvalidLockRequest(f"complete(): the value must be bytes, not {type(value).__name__}.")
        if isinstance(keep_for, bool) or not isinstance(keep_for, int | float) or not 0 < keep_for < math.inf:
            raise InvalidLockRequest(f"complete(keep_for={keep_for!r}): pass how many seconds to keep it, e.g. 86400.")
        self.process_state.ensure_open()
        Completion(self.process_state.parts).complete(lease, value, keep_for=float(keep_for))

    def get_record(self, key: str, *, sort_key: str | None = None) -> CompletionRecord | None:
        """The completion record beside the lock ``key`` (one consistent GetItem); None if none, or expired."""
        lock_id = record_item.record_id(self.call_checks.lock_id(key, sort_key))
        return record_item.parse(self.store.read_item(lock_id), self.clock.time())

    async def acomplete(self, lease: Lease, value: bytes, *, keep_for: float) -> None:
        """:meth:`complete` for coroutines; it is sent even if the caller is cancelled meanwhile."""
        call = functools.partial(self.complete, lease, value, keep_for=keep_for)
        await self.process_state.calls.run(call, even_if_cancelled=True)

    async def aget_record(self, key: str, *, sort_key: str | None = None) -> CompletionRecord | None:
        """:meth:`get_record` for coroutines."""
        return await self.process_state.calls.run(functools.partial(self.get_record, key, sort_key=sort_key))
