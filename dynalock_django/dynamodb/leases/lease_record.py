"""The protocol's side of one lease: what its writes are conditioned on and change, and who hears when it ends.

A :class:`~.lease.Lease` is the holder's handle; this record is what the
lease writes (:mod:`.lease_writes`), the heartbeat and this process's
holdings read and change, each write under the record's ``write_lock``.
"""

from __future__ import annotations

import _thread
import logging
import os
import threading
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from .. import telemetry
from ..wire.conditions import Detached, Holding, KeptAlive
from ..wire.display import printable

if TYPE_CHECKING:
    from ..clock import Clock
    from ..telemetry import Described, LostCause
    from ..telemetry import Holding as Measured
    from ..wire.item import GrantAnswer, LockInfo
    from ..wire.layout import LockId
    from ..wire.waiters import Waiter

logger = logging.getLogger("dynalock_django.heartbeat")

State = Literal["held", "released", "lost"]
# Makes each record's lost event, once (few records ever need one: see LeaseRecord.lost).
_LOST_EVENTS = threading.Lock()
# Told that the lease ended; the handle binds itself (Lease.add_lost_callback), so a record needs no handle.
Callback = Callable[[], None]


class _ThisProcess:
    """This process's id, as ``os.getpid()`` says it, kept: a lock asks it three times (a system call each),
    and only a fork changes it (the child renews it before any of its code runs)."""

    id = os.getpid()

    @classmethod
    def renew(cls) -> None:
        cls.id = os.getpid()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_ThisProcess.renew)


class LeaseRecord:
    """One lease as the protocol keeps it (its holder's handle is a :class:`~.lease.Lease`)."""

    # What a lease starts with, kept on the class: a record sets only what changes (one is made a lock).
    state: State = "held"
    # Lost because another writer changed the item (not merely expired):
    # a release would only fail its condition, so it is not attempted.
    superseded = False
    lost_reason: str | None = None
    lost_to: LockInfo | None = None
    # Let go by this process, but DynamoDB did not confirm the release: the item frees itself within one lease.
    release_unconfirmed = False
    # Set when the lease is lost: made at the first wait for it (see ``lost``), as few leases ever have one.
    _lost: threading.Event | None = None
    _lost_set = False  # the event's state, made or not
    # LockClient.stop_renewing wrote its last renewal: the heartbeat leaves it alone (one may be queued already).
    renewals_stopped = False
    # A renewal failed since the last that succeeded: running out now is DynamoDB's doing, not a pause.
    renewal_failed = False
    # What telemetry counts of this lease from its grant (None: not granted here, or no OpenTelemetry).
    telemetry: Measured | None = None
    # How telemetry names the lock, as its acquire's caller described it (None: not described).
    described: Described | None = None
    # What DynamoDB answered the grant (None: a grant recovered from a lost answer, or a permit's), which a
    # readers-writer lock's writer reads for the readers; and the mark its release leaves while it has not seen
    # them gone (readers_mark.py).
    grant_answer: GrantAnswer | None = None
    release_readers_mark: str | None = None

    def __init__(
        self,
        clock: Clock,
        *,
        key: str,
        sort_key: str | None,
        owner_name: str,
        version: str | None,
        fencing_token: int,
        data: bytes | None,
        lease_duration: float,
        valid_from: float,
        acquired_at: datetime | None,
        keep_alive: bool,
        waiters: tuple[Waiter, ...] = (),
        permit: int | None = None,
    ) -> None:
        self.clock = clock
        # The index of the permit this lease holds, when its lock is one of a counted lock's (None: a plain lock).
        self.permit = permit
        self.key = key
        self.sort_key = sort_key
        self.lock_id: LockId = (key, sort_key)
        self.owner_name = owner_name
        self.fencing_token = fencing_token
        self.data = data
        self.lease_duration = lease_duration
        self.acquired_at = acquired_at
        self.keep_alive = keep_alive
        # Who asked for the lock next, first asked first, as the grant or a detached lease's last renewal found them.
        self.waiters = waiters
        # The version we last confirmed, then versions we tried to write whose
        # outcome is unknown: the next write is conditioned on any of them.
        # A handle on a lock granted elsewhere has written none yet.
        self.versions: list[str] = [version] if version is not None else []
        # The monotonic time the last successful write to this lease started (its lease counts from there).
        self.valid_from = valid_from
        self.process_id = _ThisProcess.id
        # Serializes writes to this lease (heartbeat, extend, release); re-entrant
        # because an on_lost callback may release the lease it is told about. The C lock that threading.RLock()
        # makes, made here without that function's Python frame (one per grant).
        self.write_lock = _thread.RLock()
        self._lost_callbacks: list[Callback] = []
        self._release_callbacks: list[Callback] = []

    @property
    def lost(self) -> threading.Event:
        """Set once the lease is lost (``Lease.wait_until_lost`` waits on it)."""
        with _LOST_EVENTS:
            if self._lost is None:
                self._lost = threading.Event()
                if self._lost_set:
                    self._lost.set()
            return self._lost

    @property
    def record_version_number(self) -> str | None:
        return self.versions[0] if self.versions else None

    @property
    def safe_until(self) -> float:
        """The monotonic time at which the holder must stop trusting the lease."""
        return self.valid_from + self.lease_duration

    def remaining(self) -> float:
        """Seconds the holder may still rely on the lock; 0 once lost or released, and in a forked child."""
        if self.state != "held" or self.process_id != _ThisProcess.id:  # lost, released, or a forked child's
            return 0.0
        return max(0.0, self.valid_from + self.lease_duration - self.clock.monotonic())  # safe_until

    @property
    def belongs_to_this_process(self) -> bool:
        """False in a forked child: the parent's leases stay the parent's."""
        return self.process_id == _ThisProcess.id

    def holding(self) -> Holding:
        """How this lease's writes recognise its holding (the rule is :func:`.conditions.still_held`'s)."""
        if self.keep_alive:
            return KeptAlive(self.owner_name, tuple(self.versions))
        return Detached(self.owner_name, self.fencing_token)

    def add_unanswered_version(self, version: str) -> None:
        """A write of ``version`` got no answer: it may have landed, so later writes accept it too."""
        self.versions.append(version)

    def renewed(
        self, version: str, started: float, lease_duration: float, waiters: tuple[Waiter, ...] | None = None
    ) -> None:
        """A renewal that started at ``started`` (monotonic) stored ``version`` (and found ``waiters``, if told)."""
        if waiters is not None:
            self.waiters = waiters
        self.versions = [version]
        self.renewal_failed = False
        self.valid_from = started
        self.lease_duration = lease_duration

    def add_lost_callback(self, callback: Callback) -> None:
        self._lost_callbacks.append(callback)
        if self._lost_set:
            self._run_callback(callback)

    def add_release_callback(self, callback: Callback) -> None:
        self._release_callbacks.append(callback)

    def add_end_callback(self, callback: Callback) -> None:
        """Call ``callback()`` once the lease ends here, released or lost (as both ``add_*_callback`` would)."""
        self._release_callbacks.append(callback)
        self.add_lost_callback(callback)

    def mark_released(self, *, confirmed: bool = True) -> None:
        """This process let go of the lease; ``confirmed`` False: DynamoDB did not answer the release."""
        if self.state == "held":  # a lease lost, then released, ended when it was lost
            if self.telemetry is not None:  # measured (else telemetry has nothing to end: no call)
                telemetry.lease_ended(self.telemetry, release_failed=not confirmed)
            self.release_unconfirmed = not confirmed
        self.state = "released"
        # Each runs once, so none is kept after (nor a lost one: a released lease is never lost). A callback that
        # holds its record (the reentrancy's) would otherwise keep the two alive until the garbage collector ran.
        callbacks, self._release_callbacks, self._lost_callbacks = self._release_callbacks, [], []
        for callback in callbacks:
            self._run_callback(callback)

    def mark_lost(self, reason: str, current: LockInfo | None = None, *, superseded: bool) -> None:
        """Report the lease lost (once): ``on_lost`` callbacks run, ``wait_until_lost()`` returns."""
        if self.state != "held":
            return
        telemetry.lease_ended(self.telemetry, self._lost_cause(current, superseded))
        self.state = "lost"
        self.superseded = superseded
        self.lost_reason = reason
        self.lost_to = current
        # A kept-alive lease lost is news for this process; a detached one's owner is told by the caller.
        level = logging.WARNING if self.keep_alive else logging.INFO
        logger.log(
            level,
            "Lost lock %s (owner %s, token %s): %s",
            printable(self.key),
            printable(self.owner_name),
            self.fencing_token,
            reason,
        )
        with _LOST_EVENTS:
            self._lost_set = True
            event = self._lost
        if event is not None:
            event.set()
        callbacks, self._lost_callbacks = self._lost_callbacks, []  # each runs once (as a release's do)
        for callback in callbacks:
            self._run_callback(callback)

    def _lost_cause(self, current: LockInfo | None, superseded: bool) -> LostCause | None:
        """Why the lease was lost, for telemetry; None when it was not lost to anyone (closed without a release)."""
        if superseded:
            if current is None:
                return "released_by_operator"  # deleted: nobody holds it
            if current.is_released and not self._held_by_another_since(current):
                return "released_by_operator"
            # Held by another now, or released by one who held it after us (a takeover, then a release).
            return "taken_over"
        if self.safe_until > self.clock.monotonic():
            return None
        return "unavailable" if self.renewal_failed else "expired"

    def _held_by_another_since(self, current: LockInfo) -> bool:
        """Whether ``current`` (the item now) was written by a holding after ours: another owner, or another token.

        A release, forced or not, keeps the released holding's owner and token.
        """
        if current.owner_name != self.owner_name:
            return True
        return current.fencing_token is not None and current.fencing_token != self.fencing_token

    def _run_callback(self, callback: Callback) -> None:
        try:
            callback()
        except Exception:
            # A broken callback must not stop the heartbeat of other leases, nor a release.
            logger.exception("Lease callback %r for %r raised", callback, self.key)


# Why a lease whose safe time passed before any renewal landed is lost (the heartbeat and a late release say it).
RAN_OUT = "its lease ran out without a successful renewal"


def lost_message(key: str, current: LockInfo | None) -> str:
    """Why the lease on ``key`` is gone, as found in ``current`` (the item now, None when deleted)."""
    if current is None:
        return f"the lock item {key!r} was deleted by someone else"
    if current.is_released:
        by = f" by {printable(current.released_by)}" if current.released_by else ""
        return f"the lock {key!r} was released{by}"
    return f"the lock {key!r} was taken over by {current.owner_name!r}"
