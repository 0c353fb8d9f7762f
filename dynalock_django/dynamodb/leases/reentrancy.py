"""Reentrancy: the locks of one client each calling context holds, so that asking again costs no request.

A *context* is the code that would wait for itself: an asyncio task, or a
thread running sync code. It is told by two things together. A marker kept in
a :class:`~contextvars.ContextVar`, so that code run in another context on the
same thread (asgiref's one thread serving every request's sync code) is another
holder; and the task or thread running now, because the marker travels with
every copy of the context (a child task, a thread of ``asyncio.to_thread``)
while the copy runs beside its holder and must wait for it. Thread objects,
not thread ids: an id is reused once its thread ends.

A hold's leases are handles on one record: the same fencing token, one item,
one heartbeat. Each handle is released once; the lock's own release is sent by
the last (the outermost, in nested code). A hold whose lease was lost or
released some other way (a close) is forgotten as soon as it is seen.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from typing import TYPE_CHECKING

from ..exceptions import InvalidLockRequest, LockLost, WouldDeadlock
from .lease import Lease, record_of

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from ..options import AcquireOptions
    from ..wire.layout import LockId
    from .holdings import Holdings
    from .lease import LeaseClient
    from .lease_record import LeaseRecord

_MARKER: contextvars.ContextVar[object] = contextvars.ContextVar("dynalock_holder")

Holder = tuple[object, object]  # (the context's marker, the task or thread running it)


def _runner() -> object:
    # Asked before every acquire: asyncio's own probe answers None in a plain thread, where
    # current_task() would raise (and an exception costs a sync acquire more than the rest of this).
    loop = asyncio._get_running_loop()  # in asyncio.__all__: the running loop or None, never raising
    task = asyncio.current_task(loop) if loop is not None else None
    return task if task is not None else threading.current_thread()


def _current_holder(*, mark: bool) -> Holder | None:
    """Who is calling; None when its context never held a lock (and ``mark`` is False)."""
    marker = _MARKER.get(None)
    if marker is None:
        if not mark:
            return None
        marker = object()
        _MARKER.set(marker)
    return marker, _runner()


class _Hold:
    __slots__ = ("granted", "handles", "holder", "record", "shareable")

    def __init__(self, holder: Holder, granted: Lease, handles: list[Lease], shareable: bool) -> None:
        self.holder = holder
        self.granted = granted  # the lease the acquire was granted: the holdings' and the heartbeat's
        self.record: LeaseRecord = record_of(granted)
        self.handles = handles
        # Taken as a member of a lease group: the group releases it as a whole, so no handle may outlive it.
        self.shareable = shareable


class Reentrancy:
    """Which of one client's locks each context holds, and how many handles on each it has given out."""

    def __init__(self, client: LeaseClient, holdings: Holdings) -> None:
        self._client = client
        self._holdings = holdings
        self._mutex = threading.Lock()
        self._holds: dict[LockId, _Hold] = {}

    def acquire(self, lock_id: LockId, options: AcquireOptions, reentrant: bool, take: Callable[[], Lease]) -> Lease:
        """A handle on the calling context's hold of ``lock_id`` (no request), else ``take()``'s lease, held here."""
        return self.reenter(lock_id, options, reentrant=reentrant) or self.held(take())

    def try_acquire(
        self,
        lock_id: LockId,
        options: AcquireOptions,
        reentrant: bool,
        take: Callable[[], Lease | None],
    ) -> Lease | None:
        """:meth:`acquire` for one attempt (``take()``): None at once where it raises WouldDeadlock."""
        try:
            handle = self.reenter(lock_id, options, reentrant=reentrant)
        except WouldDeadlock:
            return None
        return handle or self._held_if_any(take())

    async def aacquire(
        self, lock_id: LockId, options: AcquireOptions, reentrant: bool, take: Callable[[], Awaitable[Lease]]
    ) -> Lease:
        """:meth:`acquire` for coroutines: the hold is the calling task's."""
        return self.reenter(lock_id, options, reentrant=reentrant) or self.held(await take())

    async def atry_acquire(
        self, lock_id: LockId, options: AcquireOptions, reentrant: bool, take: Callable[[], Awaitable[Lease | None]]
    ) -> Lease | None:
        """:meth:`try_acquire` for coroutines."""
        try:
            handle = self.reenter(lock_id, options, reentrant=reentrant)
        except WouldDeadlock:
            return None
        return handle or self._held_if_any(await take())

    def reenter(self, lock_id: LockId, options: AcquireOptions, *, reentrant: bool) -> Lease | None:
        """A new handle on the lock the calling context holds; None when it does not hold ``lock_id``.

        Raises WouldDeadlock when it holds it and ``reentrant`` is False: waiting would wait for itself.
        The handle is the hold's lease (its data, owner and duration); only ``on_lost`` is its own.
        """
        _check_reentrant(reentrant, options)
        hold = self._held_here(lock_id)
        if hold is None:
            return None
        if not reentrant or not hold.shareable:
            raise self._would_deadlock([lock_id], in_group=reentrant)
        handle = Lease(self._client, hold.record, reentered=True)
        if options.on_lost is not None:
            handle.add_lost_callback(options.on_lost)
        with self._mutex:
            hold.handles.append(handle)
        return handle

    def refuse_held(self, lock_ids: list[LockId]) -> None:
        """WouldDeadlock naming the keys of ``lock_ids`` the calling context holds, if any (``acquire_many``)."""
        held = [(lock_id, hold) for lock_id in lock_ids if (hold := self._held_here(lock_id)) is not None]
        if held:
            raise self._would_deadlock([lock_id for lock_id, _ in held], in_group=False)

    def holds_any(self, lock_ids: list[LockId]) -> bool:
        """Whether the calling context holds one of ``lock_ids`` (``try_acquire_many``: None at once)."""
        return any(self._held_here(lock_id) is not None for lock_id in lock_ids)

    def held(self, lease: Lease, *, shareable: bool = True) -> Lease:
        """Record ``lease``, just granted (and renewed by this client), as held by the calling context."""
        record = record_of(lease)
        if record.keep_alive:
            holder = _current_holder(mark=True)
            assert holder is not None  # marked
            with self._mutex:
                self._holds[record.lock_id] = _Hold(holder, lease, [lease], shareable)
            forget = functools.partial(self._forget, lease)  # as Lease.add_*_callback binds it, once for both
            record.add_release_callback(forget)
            record.add_lost_callback(forget)
        return lease

    def _held_if_any(self, lease: Lease | None) -> Lease | None:
        return None if lease is None else self.held(lease)

    def releasing(self, lease: Lease, *, best_effort: bool) -> Lease | None:
        """The lease whose release sends the request when ``lease`` is released; None when it ends here.

        None while other leases of its hold remain (no request). When ``lease`` is its hold's last,
        the hold's granted lease: the one the holdings and the heartbeat know. ``lease`` itself when it
        is no hold's of this registry (then it is released or lost as any lease is).
        """
        record = record_of(lease)
        with self._mutex:
            hold = self._holds.get(record.lock_id)
            if hold is None or hold.record is not record or record.state != "held":
                return lease
            if len(hold.handles) == 1 and hold.handles[0] is lease:  # the usual hold: one handle, its last
                del self._holds[record.lock_id]
                return hold.granted
            if not any(handle is lease for handle in hold.handles):
                return None  # this lease was released already: a no-op, as releasing a lease twice is
            hold.handles = [handle for handle in hold.handles if handle is not lease]
            if not hold.handles:
                del self._holds[record.lock_id]
                return hold.granted
        if not lease.is_held() and not best_effort:
            # The outer holder still has the lock to release; this block was not protected all through.
            raise LockLost(f"Lock {lease.key!r} is no longer held: {lease.lost_reason or 'its lease ran out'}")
        return None

    def _held_here(self, lock_id: LockId) -> _Hold | None:
        # No hold of the key at all (an uncontended acquire): nobody's, so not the caller's. A hold of the
        # caller's own was recorded by the caller itself, before it asks: the look needs no mutex.
        if lock_id not in self._holds:
            return None
        holder = _current_holder(mark=False)
        if holder is None:
            return None
        with self._mutex:
            hold = self._holds.get(lock_id)
            if hold is not None and hold.record.state != "held":
                del self._holds[lock_id]
                return None
        if hold is None or hold.holder[0] is not holder[0] or hold.holder[1] is not holder[1]:
            return None
        return hold

    def _would_deadlock(self, lock_ids: list[LockId], *, in_group: bool) -> WouldDeadlock:
        keys = ", ".join(repr(lock_id[0]) for lock_id in lock_ids)
        if in_group:
            advice = "it was taken with acquire_many, whose group is released as a whole: release the group first"
        else:
            advice = "pass reentrant=True to share the hold (same fencing token, no request), or release it first"
        holders = [self._holdings.holder(lock_id) for lock_id in lock_ids]
        return WouldDeadlock(
            f"This thread or task already holds {keys} through this client: waiting would wait for itself; {advice}.",
            holders[0],
            holders=holders,
        )

    def _forget(self, lease: Lease) -> None:
        record = record_of(lease)
        if record.lock_id not in self._holds:  # the usual release: its hold ended already, in ``releasing``
            return
        with self._mutex:
            hold = self._holds.get(record.lock_id)
            if hold is not None and hold.record is record:
                del self._holds[record.lock_id]


def _check_reentrant(reentrant: bool, options: AcquireOptions) -> None:
    if not isinstance(reentrant, bool):
        raise InvalidLockRequest(f"reentrant={reentrant!r}: pass True (share this context's hold) or False.")
    if reentrant and not options.keep_alive:
        raise InvalidLockRequest(
            "reentrant=True with keep_alive=False: a detached lease is held by its owner elsewhere, not by this "
            "thread or task, so there is no hold to share; drop one of the two."
        )
