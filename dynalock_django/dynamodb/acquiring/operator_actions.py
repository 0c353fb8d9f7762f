"""Acting on someone else's lock, as read: releasing it (an operator) or taking it now (an operator or a user).

Both are one conditional write on the holding that was read: its owner and
fencing token, which heartbeats do not change (:func:`.conditions.same_holding`).
If the lock changed hands or was released since the read, LockNotAcquired is
raised and nothing changes.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .. import telemetry
from ..aws.store import Refused
from ..exceptions import LockNotAcquired
from ..leases.lease import Lease, record_of
from ..leases.lease_record import lost_message
from ..wire import writes
from ..wire.display import printable
from ..wire.item import LockInfo, describe_holder
from ..wire.writes import Stamp

if TYPE_CHECKING:
    from ..options import AcquireOptions
    from ..telemetry import Described
    from .acquirer import Acquirer
    from .parts import EngineParts

acquire_logger = logging.getLogger("dynalock_django.acquire")
release_logger = logging.getLogger("dynalock_django.release")


class OperatorActions:
    def __init__(self, parts: EngineParts, acquirer: Acquirer) -> None:
        self._parts = parts
        self._acquirer = acquirer  # grants the lease a takeover wins, as any acquire's

    @telemetry.traced("dynalock.release", **{"dynalock.forced": True})
    def force_release(self, lock: LockInfo, *, released_by: str, described: Described | None) -> LockInfo:
        """Release ``lock`` as read; ``described`` names it on the span (the lock is someone else's: no lease says)."""
        request = writes.force_release(
            self._parts.layout,
            lock,
            version=writes.new_version(),
            released_by=released_by,
            wall_time=self._parts.clock.time(),
        )
        try:
            released = self._parts.store.update(request)
        except Refused as refused:
            now = refused.current
            raise LockNotAcquired(
                f"Lock {lock.key!r} changed since it was read ({describe_holder(now)}); nothing was released.", now
            ) from refused
        release_logger.warning(
            "Lock %s held by %s (token %s) was force-released by %s",
            *map(printable, (lock.key, lock.owner_name, lock.fencing_token, released_by)),
        )
        return self._parts.layout.parse(released)

    @telemetry.traced("dynalock.takeover")
    def take_over(self, lock: LockInfo, options: AcquireOptions, *, dequeue: list[str], unchanged: bool) -> Lease:
        stamp = Stamp.new(options.owner_name, options.lease_duration, self._parts.clock)
        request = writes.take_over(
            self._parts.layout, lock, stamp, data=options.data, dequeue=dequeue, unchanged=unchanged
        )
        try:
            taken = self._parts.layout.parse(self._parts.store.update(request))
        except Refused as refused:
            now = refused.current
            if not (stamp.landed_in(now) and now.fencing_token is not None):
                raise LockNotAcquired(
                    f"Lock {lock.key!r} changed since it was read ({describe_holder(now)}); nothing was taken over.",
                    now,
                ) from refused
            taken = now
        assert taken.fencing_token is not None  # the write issued it
        # INFO: a takeover is asked for by the caller (the admin hands a tab's lock to its next page on every
        # reload); who took whose lock, when it matters, is the caller's to record (the admin's log).
        acquire_logger.info("Lock %r held by %r was taken over by %r", lock.key, lock.owner_name, options.owner_name)
        lock_id = (lock.key, lock.sort_key)
        replaced = self._parts.holdings.get(lock_id)
        if replaced is not None:
            # This very client held it: that lease ends now, not at a heartbeat that would never come.
            with record_of(replaced).write_lock:
                self._parts.holdings.forget(replaced, lost=(lost_message(replaced.key, taken), taken))
        return self._acquirer.grant(
            lock_id, stamp.version, taken.fencing_token, stamp.started, options, waiters=taken.waiters
        )
