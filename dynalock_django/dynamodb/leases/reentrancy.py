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

A readers-writer lock's reader is a hold of its own permit, not of the write
item; the context's readers are kept here by write item all the same, because
a mix of the two in one context waits for itself (docs/protocol.md, "Readers
and writers"): the writer's drain waits for the context's reader, and a reader
waits while the context holds the write item. Both are WouldDeadlock at once:
a lock is neither upgraded nor downgraded.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from dataclasses import dataclass
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


def _current_holder(*, mark: bool) -> Holder | None:
    """Who is calling; None when its context never held a lock (and ``mark`` is False)."""
    marker = _MARKER.get(None)
    if marker is None:
        if not mark:
            return None
        marker = object()
        _MARKER.set(marker)
    # The task or thread running it. asyncio's own probe answers None in a plain thread, where current_task()
    # would raise (and an exception costs a sync acquire more than the rest of this).
    loop = asyncio._get_running_loop()  # in asyncio.__all__: the running loop or None, never raising
    task = asyncio.current_task(loop) if loop is not None else None
    return marker, task if task is not None else threading.current_thread()


def _same(holder: Holder, other: Holder) -> bool:
    """The same context: its marker and its thread or task (a tuple compares by identity here, not equality)."""
    return holder[0] is other[0] and holder[1] is other[1]


class _Hold:
    __slots__ = ("granted", "handles", "holder", "record", "shareable")

    def __init__(self, holder: Holder, granted: Lease, record: LeaseRecord, shareable: bool) -> None:
        self.holder = holder
        self.granted = granted  # the lease the acquire was granted: the holdings' and the heartbeat's
        self.record = record  # granted's
        self.handles = [granted]
        # Taken as a member of a lease group: the group releases it as a whole, so no handle may outlive it.
        self.shareable = shareable


@dataclass
class _Read:
    holder: Holder
    lease: Lease  # the reader's permit


class Reentrancy:
    """Which of one client's locks each context holds, and how many handles on each it has given out."""

    def __init__(self, client: LeaseClient, holdings: Holdings) -> None:
        self._client = client
        self._holdings = holdings
        self._mutex = threading.Lock()
        self._holds: dict[LockId, _Hold] = {}
        self._reads: dict[LockId, list[_Read]] = {}  # by write item: the readers of its lock each context holds

    def acquire(
        self,
        lock_id: LockId,
        options: AcquireOptions,
        reentrant: bool,
        take: Callable[[], Lease],
        *,
        waits_for_readers: bool = False,
    ) -> Lease:
        """A handle on the calling context's hold of ``lock_id`` (no request), else ``take()``'s lease, held here.

        ``waits_for_readers``: a readers-writer lock's writer, refused while the context holds one of its readers.
        """
        return self.reenter(lock_id, options, reentrant=reentrant, waits_for_readers=waits_for_readers) or self.held(
            take()
        )

    def try_acquire(
        self,
        lock_id: LockId,
        options: AcquireOptions,
        reentrant: bool,
        take: Callable[[], Lease | None],
        *,
        waits_for_readers: bool = False,
    ) -> Lease | None:
        """:meth:`acquire` for one attempt (``take()``): None at once where it raises WouldDeadlock."""
        try:
            handle = self.reenter(lock_id, options, reentrant=reentrant, waits_for_readers=waits_for_readers)
        except WouldDeadlock:
            return None
        return handle or self._held_if_any(take())

    async def aacquire(
        self,
        lock_id: LockId,
        options: AcquireOptions,
        reentrant: bool,
        take: Callable[[], Awaitable[Lease]],
        *,
        waits_for_readers: bool = False,
    ) -> Lease:
        """:meth:`acquire` for coroutines: the hold is the calling task's."""
        handle = self.reenter(lock_id, options, reentrant=reentrant, waits_for_readers=waits_for_readers)
        return handle or self.held(await take())

    async def atry_acquire(
        self,
        lock_id: LockId,
        options: AcquireOptions,
        reentrant: bool,
        take: Callable[[], Awaitable[Lease | None]],
        *,
        waits_for_readers: bool = False,
    ) -> Lease | None:
        """:meth:`try_acquire` for coroutines."""
        try:
            handle = self.reenter(lock_id, options, reentrant=reentrant, waits_for_readers=waits_for_readers)
        except WouldDeadlock:
            return None
        return handle or self._held_if_any(await take())

    def reenter(
        self, lock_id: LockId, options: AcquireOptions, *, reentrant: bool, waits_for_readers: bool = False
    ) -> Lease | None:
        """A new handle on the lock the calling context holds; None when it does not hold ``lock_id``.

        Raises WouldDeadlock when it holds it and ``reentrant`` is False: waiting would wait for itself;
        and, with ``waits_for_readers``, when it holds a reader of the lock (a writer would wait for it).
        The handle is the hold's lease (its data, owner and duration); only ``on_lost`` is its own.
        """
        if reentrant is not False:  # the usual acquire's needs no look
            _check_reentrant(reentrant, options)
        if waits_for_readers and (read := self._read_here(lock_id)) is not None:
            raise WouldDeadlock(
                f"This thread or task holds a read lock of {lock_id[0]!r} through this client: its writer would "
                "wait for that reader, itself. A read lock is not upgraded: release the read before asking to write.",
                self._holdings.holder(read.lease.lock_id),
            )
        # No hold of the key at all (an uncontended acquire): nobody's, so not the caller's.
        hold = self._held_here(lock_id) if lock_id in self._holds else None
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

    def read(self, write_id: LockId, take: Callable[[], Lease]) -> Lease:
        """``take()``'s reader of the lock whose write item is ``write_id``, held by the calling context.

        WouldDeadlock at once, before ``take()``, while the context holds the write item: the reader would
        wait for that writer, itself.
        """
        self._refuse_written(write_id)
        return self._reading(write_id, take())

    def try_read(self, write_id: LockId, take: Callable[[], Lease | None]) -> Lease | None:
        """:meth:`read` for one attempt: None at once where it raises WouldDeadlock."""
        if self._held_here(write_id) is not None:
            return None
        lease = take()
        return None if lease is None else self._reading(write_id, lease)

    async def aread(self, write_id: LockId, take: Callable[[], Awaitable[Lease]]) -> Lease:
        """:meth:`read` for coroutines: the reader is the calling task's."""
        self._refuse_written(write_id)
        return self._reading(write_id, await take())

    async def atry_read(self, write_id: LockId, take: Callable[[], Awaitable[Lease | None]]) -> Lease | None:
        """:meth:`try_read` for coroutines."""
        if self._held_here(write_id) is not None:
            return None
        lease = await take()
        return None if lease is None else self._reading(write_id, lease)

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
                self._holds[record.lock_id] = _Hold(holder, lease, record, shareable)
            # Once for both ends, a release or a loss (a record tells its callbacks nothing: bound here).
            record.add_end_callback(functools.partial(self._forget, record))
        return lease

    def _reading(self, write_id: LockId, lease: Lease) -> Lease:
        if lease.keep_alive:
            holder = _current_holder(mark=True)
            assert holder is not None  # marked
            with self._mutex:
                self._reads.setdefault(write_id, []).append(_Read(holder, lease))
            forget = functools.partial(self._forget_read, write_id)
            lease.add_release_callback(forget)
            lease.add_lost_callback(forget)
        return lease

    def _refuse_written(self, write_id: LockId) -> None:
        hold = self._held_here(write_id)
        if hold is not None:
            raise WouldDeadlock(
                f"This thread or task holds the write lock of {write_id[0]!r} through this client: a reader would "
                "wait for that writer, itself. A write lock is not downgraded, and its holder needs no read lock "
                "to read under it; release the write before asking to read.",
                self._holdings.holder(write_id),
            )

    def _read_here(self, write_id: LockId) -> _Read | None:
        """A reader of the lock whose write item is ``write_id`` the calling context holds, if any."""
        if write_id not in self._reads:  # nobody here reads it (every writer's case but a mix): no mutex
            return None
        holder = _current_holder(mark=False)
        if holder is None:
            return None
        with self._mutex:
            for read in self._reads.get(write_id, ()):
                if _same(read.holder, holder) and read.lease.state == "held":
                    return read
        return None

    def _forget_read(self, write_id: LockId, lease: Lease) -> None:
        with self._mutex:
            reads = [read for read in self._reads.get(write_id, ()) if read.lease is not lease]
            if reads:
                self._reads[write_id] = reads
            else:
                self._reads.pop(write_id, None)

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
        if hold is None or not _same(hold.holder, holder):
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

    def _forget(self, record: LeaseRecord) -> None:
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
