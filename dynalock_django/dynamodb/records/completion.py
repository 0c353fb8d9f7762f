"""Completing a lease: its release and its completion record in one all-or-none write, by the live holder only.

Where the store has transactions, one TransactWriteItems holds the lease's
own release (conditioned on its owner and record version, as every release
is) and the record's write (conditioned on no later holder's record): a
holder that lost its lease cannot complete, and a completion is never half
done. Where it has none (dynalite), the record is written first, conditioned
on its own item (no later holder's token there), after the holder checked
its safe time, then the lease is released; a release that finds the lock
taken over deletes the record again (if it is still ours) and raises
LockLost. Until then a duplicate may have replayed it: the docs say so.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from ..aws import botocore_errors
from ..aws.store import Cancelled, Refused, TransactionsUnsupported
from ..exceptions import DynamoDBError, LockLost
from ..leases.lease import record_of
from ..leases.lease_record import lost_message
from ..wire import writes
from ..wire.writes import Stamp
from . import record_item

if TYPE_CHECKING:
    from ..acquiring.parts import EngineParts
    from ..leases.lease import Lease


class Completion:
    """Writes of completion records for one client's leases (see :meth:`.RecordMethods.complete`)."""

    def __init__(self, parts: EngineParts) -> None:
        self._parts = parts

    def complete(self, lease: Lease, value: bytes, *, keep_for: float) -> None:
        record, parts = record_of(lease), self._parts
        if not record.belongs_to_this_process:
            raise LockLost(f"Lease {lease.key!r} belongs to process {record.process_id}, not this one (after fork).")
        with record.write_lock:
            lease.ensure_held()  # a lease lost or run out completes nothing
            store = record_item.store(
                parts.layout,
                lease.lock_id,
                owner_name=lease.owner_name,
                fencing_token=lease.fencing_token,
                value=value,
                expires_at=parts.clock.time() + keep_for,
            )
            stamp = Stamp.new(lease.owner_name, lease.lease_duration, parts.clock)
            release = parts.lease_writer.release_request(lease, stamp)
            try:
                parts.store.transact([writes.in_transaction(release), writes.in_transaction(store)])
            except TransactionsUnsupported:
                self._store_then_release(lease, store)
                return
            except Cancelled as cancelled:
                self._refused(lease, stamp, cancelled)
                return
            except DynamoDBError as error:
                if botocore_errors.may_have_landed(error):
                    record.add_unanswered_version(stamp.version)
                raise
            parts.holdings.forget(lease, released=True)

    def _refused(self, lease: Lease, stamp: Stamp, cancelled: Cancelled) -> None:
        """Nothing was written: LockLost, unless an earlier try of this very transaction had landed."""
        if 0 in cancelled.refused:
            current = cancelled.refused[0].current
            if stamp.landed_in(current):
                self._parts.holdings.forget(lease, released=True)
                return
            message = lost_message(lease.key, current)
            self._parts.holdings.forget(lease, lost=(message, current))
            raise LockLost(f"Cannot complete {lease.key!r}: {message}.", current)
        # Still ours, but a later holder's record is there (a token issued after ours): ours must not replace it.
        self._parts.lease_writer.release(lease, best_effort=True)
        raise LockLost(f"Cannot complete {lease.key!r}: a later holder's completion record is stored.")

    def _store_then_release(self, lease: Lease, store: dict[str, Any]) -> None:
        """Without transactions: the record, then the release; a release that finds the lock lost takes it back."""
        lease.ensure_held()
        try:
            self._parts.store.update(store)
        except Refused:
            self._parts.lease_writer.release(lease, best_effort=True)
            raise LockLost(f"Cannot complete {lease.key!r}: a later holder's completion record is stored.") from None
        try:
            self._parts.lease_writer.release(lease)
        except LockLost:
            # Taken over meanwhile: our record goes, unless a later holder's replaced it (its token differs).
            with contextlib.suppress(Refused, DynamoDBError):
                self._parts.store.delete(
                    record_item.unstore(self._parts.layout, lease.lock_id, fencing_token=lease.fencing_token)
                )
            raise
