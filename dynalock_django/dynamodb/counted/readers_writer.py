"""A readers-writer lock: many readers at once, or one writer, with writer preference.

``client.readers_writer("report")`` is the write item ``report`` (a plain
lock: the writer's lease and fencing token are that lock's, so
``client.acquire("report")`` excludes readers too, though it does not wait
for them) and a set of ``max_readers`` reader permits, ``report#reader-0``
and on (:mod:`..wire.permits`). A writer takes the write item, then, if
readers may be in (:mod:`..wire.readers_mark`), waits for them to leave
(:mod:`.readers_drain`); a
reader takes a permit only while no writer holds or waits for the write
item (:mod:`.permit_round`), so a stream of readers cannot
starve a writer. See docs/protocol.md, "Readers and writers".
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from ..acquiring.wait_loop import await_for, wait_for
from ..telemetry import Described
from ..wire import permits
from .permit_set import CountedClient, PermitHolder, PermitSet
from .readers_drain import ReadersDrain

if TYPE_CHECKING:
    from ..leases.lease import Lease, LostCallback
    from ..leases.reentrancy import Reentrancy
    from ..options import AcquireRequest
    from ..wire.item import LockInfo

# Readers at once by default: one BatchGetItem reads them with the write item (at most 99).
READER_KIND = "read"  # how telemetry names a reader (its lock's description names the model, if any)
DEFAULT_MAX_READERS = 32
"""Readers that may hold a readers-writer lock at once unless ``max_readers=`` says otherwise."""


class ReadersWriterLock:
    """Shared readers (``acquire_read``) or one exclusive writer (``acquire_write``) of one name.

    A reader's lease has ``.permit`` (its reader permit) and that permit's token; the writer's
    lease is the write item's, whose token grows from writer to writer (the one a fenced save checks).
    A thread or task holding one of them through the same client that asks for the other would wait
    for itself: that is WouldDeadlock at once, with no request (a lock is neither upgraded nor
    downgraded; another thread or task waits as usual).
    """

    def __init__(
        self,
        client: CountedClient,
        name: str,
        *,
        max_readers: int = DEFAULT_MAX_READERS,
        sort_key: str | None = None,
        described: Described | None = None,
    ) -> None:
        permits.check_set("readers-writer lock", name, max_readers, permits.MAX_READERS)
        self.name = name
        self.max_readers = max_readers
        self._client = client
        self._write_id = client.call_checks.lock_id(name, sort_key)
        self._readers = PermitSet(
            client,
            what=f"readers of {name!r}",
            name=name,
            suffix=permits.READER_SUFFIX,
            count=max_readers,
            sort_key=sort_key,
            described=(described or Described(READER_KIND)).as_kind(READER_KIND),
        )
        self._described = described  # the writer's: the lock's own

    def __repr__(self) -> str:
        return f"<ReadersWriterLock {self.name!r} max_readers={self.max_readers}>"

    @property
    def _reentrancy(self) -> Reentrancy:
        """Which readers and writers of this lock each context holds (a mix in one context is WouldDeadlock).

        The process's, read at each call: a lock built before a fork (a module-level one under a pre-forking
        server) must not carry its parent's holds into the child, which gets a process state of its own.
        """
        return self._client.process_state.reentrancy

    def acquire_read(
        self,
        *,
        timeout: float | None = None,
        lease_duration: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
    ) -> Lease:
        """Wait until no writer holds or waits for the lock and a reader permit is ours; its lease.

        WouldDeadlock at once, with no request, when the calling thread or task holds the write lock: it
        would wait for itself (its holder reads under it without a read lock).
        """
        request = self._readers.request(timeout, lease_duration, data, on_lost)
        take = functools.partial(self._readers.acquire, request, self._write_id)
        return self._reentrancy.read(self._write_id, take)

    def try_acquire_read(
        self,
        *,
        lease_duration: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
    ) -> Lease | None:
        """One round, never waiting: a reader's lease, or None while a writer is in or all permits are held
        (None at once, with no request, where :meth:`acquire_read` raises WouldDeadlock)."""
        request = self._readers.request(0.0, lease_duration, data, on_lost)
        return self._reentrancy.try_read(
            self._write_id, functools.partial(self._readers.try_acquire, request, self._write_id)
        )

    async def aacquire_read(
        self,
        *,
        timeout: float | None = None,
        lease_duration: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
    ) -> Lease:
        """:meth:`acquire_read` for coroutines."""
        request = self._readers.request(timeout, lease_duration, data, on_lost)
        return await self._reentrancy.aread(
            self._write_id, functools.partial(self._readers.aacquire, request, self._write_id)
        )

    async def atry_acquire_read(
        self,
        *,
        lease_duration: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
    ) -> Lease | None:
        """:meth:`try_acquire_read` for coroutines."""
        request = self._readers.request(0.0, lease_duration, data, on_lost)

        async def take() -> Lease | None:
            return await self._readers.run_in_call_thread(lambda: self._readers.try_acquire(request, self._write_id))

        return await self._reentrancy.atry_read(self._write_id, take)  # the reader is the calling task's

    def acquire_write(
        self,
        *,
        timeout: float | None = None,
        lease_duration: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
        reentrant: bool = False,
    ) -> Lease:
        """Take the write item (keeping new readers out), then wait for the readers in place to leave; its lease.

        When ``timeout`` runs out the write item is released and LockTimeout names who was in the way.
        ``reentrant``: as :meth:`.LockClient.acquire`'s, for the write item. WouldDeadlock at once, with no
        request, when the calling thread or task holds a read lock of it: release the read first.
        """
        request = self._write_request(timeout, lease_duration, data, on_lost)
        take = functools.partial(self._take_write, request)
        return self._reentrancy.acquire(request.lock_id, request.options, reentrant, take, waits_for_readers=True)

    def _take_write(self, request: AcquireRequest) -> Lease:
        state, timeout = self._client.process_state, request.timeout
        deadline = None if timeout is None else state.parts.clock.monotonic() + timeout
        writer = state.acquirer.acquire(request)
        try:
            drain = self._drain(writer, deadline)
            return wait_for(drain, timeout, state.parts) if drain.needed else writer
        except BaseException:
            writer.release(best_effort=True)
            raise

    async def aacquire_write(
        self,
        *,
        timeout: float | None = None,
        lease_duration: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
        reentrant: bool = False,
    ) -> Lease:
        """:meth:`acquire_write` for coroutines; cancelling it releases the write item."""
        request = self._write_request(timeout, lease_duration, data, on_lost)
        take = functools.partial(self._atake_write, request)
        return await self._reentrancy.aacquire(
            request.lock_id, request.options, reentrant, take, waits_for_readers=True
        )

    async def _atake_write(self, request: AcquireRequest) -> Lease:
        state, timeout = self._client.process_state, request.timeout
        deadline = None if timeout is None else state.parts.clock.monotonic() + timeout
        writer = await state.async_acquirer.acquire(request)
        try:
            drain = self._drain(writer, deadline)
            return await await_for(drain, timeout, state.parts) if drain.needed else writer
        except BaseException:
            await writer.arelease(best_effort=True)
            raise

    def try_acquire_write(
        self,
        *,
        lease_duration: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
        reentrant: bool = False,
    ) -> Lease | None:
        """One attempt, never waiting: the writer's lease, or None while another writer or a reader is in.

        The write item is taken with one attempt, then (only if readers may be in) the readers are
        read once; found in, they keep it: the write item is given back. ``reentrant``: as
        :meth:`acquire_write`'s (None where that raises WouldDeadlock).
        """
        request = self._write_request(0.0, lease_duration, data, on_lost)
        self._client.process_state.ensure_open()
        take = functools.partial(self._try_take_write, request)
        return self._reentrancy.try_acquire(request.lock_id, request.options, reentrant, take, waits_for_readers=True)

    async def atry_acquire_write(
        self,
        *,
        lease_duration: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
        reentrant: bool = False,
    ) -> Lease | None:
        """:meth:`try_acquire_write` for coroutines (the hold is the calling task's)."""
        request = self._write_request(0.0, lease_duration, data, on_lost)
        self._client.process_state.ensure_open()

        async def take() -> Lease | None:
            return await self._readers.run_in_call_thread(functools.partial(self._try_take_write, request))

        return await self._reentrancy.atry_acquire(
            request.lock_id, request.options, reentrant, take, waits_for_readers=True
        )

    def _try_take_write(self, request: AcquireRequest) -> Lease | None:
        writer = self._client.process_state.acquirer.try_acquire(request)
        if writer is None:
            return None
        try:
            drain = self._drain(writer, self._client.process_state.clock.monotonic())
            lease = drain.attempt() if drain.needed else writer
            if lease is None and drain.error is not None:
                raise drain.error  # the readers could not be read: as a try that cannot tell, it raises
        except BaseException:
            writer.release(best_effort=True)
            raise
        if lease is None:
            writer.release(best_effort=True)
        return lease

    def readers(self) -> list[PermitHolder]:
        """The reader permits in use now (one consistent BatchGetItem)."""
        return self._readers.holders()

    def writer(self) -> LockInfo | None:
        """The write item as stored now (a consistent read): held by a writer unless released; None if none."""
        return self._client.store.read(self._write_id)

    def _write_request(
        self, timeout: float | None, lease_duration: float | None, data: bytes | None, on_lost: LostCallback | None
    ) -> AcquireRequest:
        checks = self._client.call_checks
        return checks.request(
            self._write_id,
            timeout=timeout,
            lease_duration=lease_duration,
            data=data,
            on_lost=on_lost,
            described=self._described,
        )

    def _drain(self, writer: Lease, deadline: float | None) -> ReadersDrain:
        parts = self._client.process_state.parts
        return ReadersDrain(
            parts,
            writer=writer,
            what=self._readers.what,
            count=self.max_readers,
            reader_ids=self._readers.ids_up_to,
            deadline=deadline,
        )
