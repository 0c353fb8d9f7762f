"""Every write to a granted lease: its renewals (the heartbeat's and ``extend``'s), its expiry, its release.

Each write is conditioned on the lease's holding (:meth:`.LeaseRecord.holding`)
and made under its record's ``write_lock``; what it finds changes the lease's
state through the record's own methods.
"""

from __future__ import annotations

import contextlib
import enum
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import telemetry
from ..aws import botocore_errors
from ..aws.store import Cancelled, Refused, TransactionsUnsupported
from ..exceptions import DynamoDBError, LockLost
from ..wire import queue_pruning, writes
from ..wire.waiters import WAITERS, parse_waiters, stale_entries
from ..wire.writes import Stamp
from .lease import record_of
from .lease_record import RAN_OUT, LeaseRecord, lost_message

if TYPE_CHECKING:
    from ..aws.store import LockStore
    from ..clock import Clock
    from ..wire.layout import LockId, TableLayout
    from .holdings import Holdings
    from .lease import Lease

release_logger = logging.getLogger("dynalock_django.release")
queue_logger = logging.getLogger("dynalock_django.queue")


class _Released(enum.Enum):
    NOW = "released by this write (or an earlier try of it)"
    ALREADY = "released before, by its own owner"
    GONE = "the item was already gone"


class LeaseWriter:
    def __init__(
        self, store: LockStore, layout: TableLayout, clock: Clock, holdings: Holdings, *, delete_on_release: bool
    ) -> None:
        self._store = store
        self._layout = layout
        self._clock = clock
        self._holdings = holdings
        self._delete_on_release = delete_on_release

    def renew(self, lease: Lease, lease_duration: float | None = None) -> None:
        """One conditional write: a new version and lease. LockLost (reported) if the lock is no longer ours."""
        record = record_of(lease)
        duration = record.lease_duration if lease_duration is None else lease_duration
        with record.write_lock:
            if record.keep_alive:
                lease.ensure_held()
            stamp = Stamp.new(record.owner_name, duration, self._clock)
            request = writes.renew(self._layout, record.lock_id, stamp, holding=record.holding())
            try:
                # Never refused by the circuit breaker: a lease must not be lost because other calls failed.
                returned = self._store.update(request, always=True)
                queue = parse_waiters(returned[WAITERS]) if WAITERS in returned else None
                self._prune_queue(record.lock_id, returned.get(WAITERS))
            except Refused as refused:
                current = refused.current
                if not stamp.landed_in(current):
                    message = lost_message(lease.key, current)
                    self._holdings.forget(lease, lost=(message, current))
                    raise LockLost(f"Lost lock {lease.key!r}: {message}.", current) from refused
                queue = current.waiters
            except DynamoDBError as error:
                record.renewal_failed = True
                if botocore_errors.may_have_landed(error):
                    record.add_unanswered_version(stamp.version)
                raise
            record.renewed(stamp.version, stamp.started, duration, queue)

    def renew_by_heartbeat(self, lease: Lease) -> None:
        """The heartbeat's :meth:`renew`: none after :meth:`renew_last` (a renewal planned before it may be queued)."""
        record = record_of(lease)
        with record.write_lock:
            if not record.renewals_stopped:
                self.renew(lease)

    def renew_last(self, lease: Lease, lease_duration: float) -> None:
        """:meth:`renew` with ``lease_duration``, then no more renewals: the lease stays held until it runs out."""
        record = record_of(lease)
        with record.write_lock:
            self.renew(lease, lease_duration)
            record.renewals_stopped = True
            self._holdings.forget(lease)

    def _prune_queue(self, lock_id: LockId, stored: Any) -> None:
        """Take out the stale entries of the queue a detached lease's renewal returned (one more write, only then).

        The holder's page renews every few seconds, so a waiter that went
        silent leaves the line soon after its window ends even when nobody
        asks. Refused: the queue changed since (someone asked or polled), and
        the next renewal looks again; unanswered: the same.
        """
        stale = stale_entries(stored, self._clock.time())
        if not stale:
            return
        try:
            self._store.update(queue_pruning.prune(self._layout, lock_id, stale))
        except (Refused, DynamoDBError) as error:
            queue_logger.debug("Taking %d stale waiters out of %r failed: %r", len(stale), lock_id, error)

    def expire(self, lease: Lease, reason: str) -> None:
        """Report the lease lost because its safe time ran out (unless a renewal just landed)."""
        with record_of(lease).write_lock:
            if lease.safe_until <= self._clock.monotonic():
                self._holdings.forget(lease, lost=(reason, None), superseded=False)

    @telemetry.traced("dynalock.release")
    def release(self, lease: Lease, *, best_effort: bool = False) -> bool:
        """Release ``lease``; see :meth:`.LockClient.release`."""
        record = record_of(lease)
        if not record.belongs_to_this_process:
            error = LockLost(f"Lease {lease.key!r} belongs to process {record.process_id}, not this one (after fork).")
            return _release_failed(error, best_effort)
        with record.write_lock:
            if record.state == "released":
                return False
            if record.superseded:
                error = LockLost(f"Cannot release {lease.key!r}: {lease.lost_reason}.", lease.lost_to)
                return _release_failed(error, best_effort)
            was_held = record.remaining() > 0
            outcome: _Released | LockLost | DynamoDBError
            try:
                outcome = self._write_release(lease, record)
            except DynamoDBError as unavailable:
                unavailable.add_note(f"The lock expires by itself within {lease.lease_duration:g}s.")
                outcome = unavailable
            except BaseException:
                self._holdings.forget(lease, released=True)
                raise
            if isinstance(outcome, LockLost):
                # Found out by the release, not the heartbeat: the lease was lost all the same, and
                # whoever waits for that (on_lost, wait_until_lost) must hear it.
                self._holdings.forget(lease, lost=(str(outcome), outcome.current))
            elif not was_held and (isinstance(outcome, DynamoDBError) or outcome is _Released.GONE):
                # It ran out before this release, which cannot tell whether anyone held it since: lost,
                # as the heartbeat would have said had it run first (a paused process races the two).
                self._holdings.forget(lease, lost=(RAN_OUT, None), superseded=False)
            else:
                # Unanswered: it is no longer renewed all the same, so it frees itself within one lease.
                self._holdings.forget(lease, released=True, confirmed=not isinstance(outcome, DynamoDBError))
        if isinstance(outcome, DynamoDBError | LockLost):
            return _release_failed(outcome, best_effort)
        if outcome is _Released.ALREADY:
            release_logger.debug("%r (token %d) was already released by its owner", lease.key, lease.fencing_token)
            return False
        if outcome is _Released.GONE and not was_held:
            # Deleted, and we cannot tell whether someone held it after our lease ran out.
            error = LockLost(f"Lock {lease.key!r} expired before release and its item is gone.")
            return _release_failed(error, best_effort)
        if release_logger.isEnabledFor(logging.DEBUG):  # its arguments cost a release more than the check
            release_logger.debug("Released %r (token %d)", lease.key, lease.fencing_token)
        return True

    @telemetry.traced("dynalock.release")
    def release_all(self, leases: Sequence[Lease], *, best_effort: bool = False) -> bool:
        """Release every lease; True when this call released them all.

        One TransactWriteItems per :data:`~.writes.MAX_TRANSACTION_ITEMS` leases where the store has
        transactions and all of them are still safely held; otherwise (or if
        the transaction is refused) each lease is released by itself, as
        :meth:`release` does, and the first failure is raised at the end.
        """
        released = True
        failure: DynamoDBError | LockLost | None = None
        for start in range(0, len(leases), writes.MAX_TRANSACTION_ITEMS):
            chunk = leases[start : start + writes.MAX_TRANSACTION_ITEMS]
            if self._release_together(chunk):
                continue
            for lease in chunk:
                try:
                    released = self.release(lease, best_effort=best_effort) and released
                except (DynamoDBError, LockLost) as error:
                    released, failure = False, failure or error
        if failure is not None:
            raise failure
        return released

    def _release_together(self, leases: Sequence[Lease]) -> bool:
        """One transaction releasing all ``leases``; False (nothing changed, or may have) to release them one by one."""
        records = [record_of(lease) for lease in leases]
        if len(leases) < 2 or not all(record.belongs_to_this_process for record in records):
            return False
        with contextlib.ExitStack() as locked:
            for record in records:
                locked.enter_context(record.write_lock)
            if not all(lease.is_held() for lease in leases):
                return False
            stamps = [Stamp.new(lease.owner_name, lease.lease_duration, self._clock) for lease in leases]
            try:
                self._store.transact(
                    [writes.in_transaction(self.release_request(*pair)) for pair in zip(leases, stamps, strict=True)]
                )
            except (Cancelled, TransactionsUnsupported) as refused:
                release_logger.debug("Releasing %d leases together failed (%r): one by one", len(leases), refused)
                return False
            except DynamoDBError as error:
                release_logger.debug("Releasing %d leases together failed (%s): one by one", len(leases), error)
                if botocore_errors.may_have_landed(error):
                    for record, stamp in zip(records, stamps, strict=True):
                        record.add_unanswered_version(stamp.version)
                return False
            for lease in leases:
                self._holdings.forget(lease, released=True)
        for lease in leases:
            release_logger.debug("Released %r (token %d)", lease.key, lease.fencing_token)
        return True

    def release_request(self, lease: Lease, stamp: Stamp) -> dict[str, Any]:
        return self._release_request(record_of(lease), stamp)

    def _release_request(self, record: LeaseRecord, stamp: Stamp) -> dict[str, Any]:
        holding = record.holding()
        if self._delete_on_release:
            return writes.delete(self._layout, record.lock_id, holding=holding)
        mark = record.release_readers_mark
        return writes.release(self._layout, record.lock_id, stamp, holding=holding, readers_mark=mark)

    def _write_release(self, lease: Lease, record: LeaseRecord) -> _Released | LockLost:
        """One conditional write that marks our lock released (or deletes it); ``record``: the lease's."""
        stamp = Stamp.new(record.owner_name, record.lease_duration, self._clock)
        request = self._release_request(record, stamp)
        try:
            if self._delete_on_release:
                self._store.delete(request)
            else:
                self._store.update(request)
            return _Released.NOW
        except Refused as refused:
            current = refused.current
        if current is None:
            return _Released.GONE  # deleted: by an earlier try of this request, or after our lease ran out
        if stamp.landed_in(current):
            return _Released.NOW
        if (
            current.is_released
            and current.released_by is None
            and (current.owner_name, current.fencing_token) == (lease.owner_name, lease.fencing_token)
        ):
            return _Released.ALREADY
        return LockLost(f"Cannot release {lease.key!r}: {lost_message(lease.key, current)}.", current)


def _release_failed(error: DynamoDBError | LockLost, best_effort: bool) -> bool:
    if not best_effort:
        raise error
    release_logger.warning("%s", error)
    return False
