"""LockClient's methods for a lock's queue of waiters (a base class of LockClient): join it, stay in it, leave it.

The queue is stored on the lock item (:mod:`.waiters`). Each call is one
conditional UpdateItem that returns the item, so a waiter learns who holds
the lock, and where it stands, from the write that keeps it in line. Who
may take a freed lock is the caller's rule: the protocol only keeps the
line. A grant keeps the queue (:func:`.writes.take_over` may take the taker
out of it); so do renewals and releases, which return it to the holder.

An entry not refreshed for :data:`.waiters.LIVE_SECONDS`, or not well-formed,
holds nobody's place: it is taken out by the writes that read it (an ask
refused for room, a detached lease's renewal: :mod:`.wire.queue_pruning`),
so the cap counts live entries, and a refresh never brings it back.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from .aws.store import Refused
from .clock import Instant
from .wire import queue_writes, validation, waiters

if TYPE_CHECKING:
    from .aws.store import LockStore
    from .clock import Clock
    from .options import CallChecks
    from .process_state import ProcessState
    from .wire.item import LockInfo
    from .wire.layout import LockId, TableLayout


class QueueMethods:
    """A lock's queue of waiters; the client provides its store, layout, checks, clock and observations."""

    layout: TableLayout
    clock: Clock
    store: LockStore
    call_checks: CallChecks
    process_state: ProcessState

    def join_queue(self, key: str, waiter_id: str, *, name: str, sort_key: str | None = None) -> LockInfo | None:
        """Queue ``waiter_id`` (shown as ``name``) for the lock; the item as it is after.

        One UpdateItem, conditioned on the lock item existing with a queue
        that has room (:data:`.waiters.MAX_WAITERS`): a lock released while
        others wait keeps its line. Joining again starts the wait anew. When
        refused, nothing is written and the item is returned as found (None: no
        item): the caller sees whether the lock is free. A full queue holding
        entries that are not live or not well-formed costs a second write, which
        takes them out and joins (conditioned on the queue being as read, so the
        cap counts live entries). A held item without a queue (written by the AWS
        Java client), or with a ``waiters`` attribute that is not a map (written
        by hand), costs a second write that starts one.
        """
        lock_id, name = self.call_checks.lock_id(key, sort_key), _checked(waiter_id, name)
        now = self.clock.time()
        entry = waiters.entry(name, int(now * 1000))
        current, joined = self._write(lock_id, queue_writes.join(self.layout, lock_id, waiter_id, entry, []))
        if joined or current is None:
            return current
        stale = [entry for entry in waiters.stale_entries(current.raw_waiters, now) if entry.waiter_id != waiter_id]
        if stale and current.owner_name is not None:
            # Refused for room: what is stale makes room (DynamoDB cannot count live entries itself).
            return self._write(lock_id, queue_writes.join(self.layout, lock_id, waiter_id, entry, stale))[0]
        if current.is_released or current.waiters or current.is_malformed:
            return current
        return self._send(lock_id, queue_writes.start(self.layout, lock_id, waiter_id, entry))

    def refresh_waiter(self, key: str, waiter_id: str, *, sort_key: str | None = None) -> LockInfo | None:
        """Mark ``waiter_id`` as still waiting (its ``seen`` time); the item as it is after, or as found.

        One UpdateItem, conditioned on the waiter being queued and live (seen
        within :data:`.waiters.LIVE_SECONDS` of now, by this clock): one that
        left, was taken out, or went silent too long is not put back. Like
        :meth:`get`, it counts as a read for :meth:`available_in`.
        """
        lock_id = self.call_checks.lock_id(key, sort_key)
        validation.check_key("waiter_id", waiter_id, waiters.MAX_WAITER_ID_BYTES)
        now_ms = int(self.clock.time() * 1000)
        return self._send(lock_id, queue_writes.refresh(self.layout, lock_id, waiter_id, now_ms))

    def leave_queue(self, key: str, waiter_id: str, *, sort_key: str | None = None) -> None:
        """Take ``waiter_id`` out of the lock's queue (one UpdateItem; nothing happens if it is not there)."""
        lock_id = self.call_checks.lock_id(key, sort_key)
        validation.check_key("waiter_id", waiter_id, waiters.MAX_WAITER_ID_BYTES)
        request = queue_writes.leave(self.layout, lock_id, waiter_id)
        with contextlib.suppress(Refused):  # refused: not queued (any more), nothing to take out
            self.store.update(request)

    def _send(self, lock_id: LockId, request: dict[str, Any]) -> LockInfo | None:
        return self._write(lock_id, request)[0]

    def _write(self, lock_id: LockId, request: dict[str, Any]) -> tuple[LockInfo | None, bool]:
        """The item after ``request`` (or as found when refused), and whether it was written."""
        try:
            stored = self.store.update(request)
            current: LockInfo | None = self.layout.parse(stored)
            written = True
        except Refused as refused:
            current, written = refused.current, False
        if current is not None:
            self.process_state.observations.saw(lock_id, current, Instant.read(self.clock))
        return current, written


def _checked(waiter_id: str, name: str) -> str:
    """The waiter's name as stored (cut to :data:`.waiters.MAX_NAME_CHARS`); InvalidLockRequest for bad arguments."""
    validation.check_key("waiter_id", waiter_id, waiters.MAX_WAITER_ID_BYTES)
    if isinstance(name, str):
        name = name[: waiters.MAX_NAME_CHARS]
    validation.check_key("waiter name", name, waiters.MAX_NAME_CHARS * 4)
    return name
