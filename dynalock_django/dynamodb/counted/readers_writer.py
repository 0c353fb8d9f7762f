"""A readers-writer lock: many readers at once, or one writer, with writer preference.

``client.readers_writer("report")`` is the write item ``report`` (a plain
lock: the writer's lease and fencing token are that lock's, so
``client.acquire("report")`` excludes readers too, though it does not wait
for them) and a set of ``max_readers`` reader permits, ``report#reader-0``
and on (:mod:`..wire.permits`). A writer takes the write item, then, if
readers may be in (:mod:`..wire.readers_mark`), waits for them to leave
(:mod:`..acquiring.readers_drain`); a
reader takes a permit only while no writer holds or waits for the write
item (:mod:`..acquiring.permit_round`), so a stream of readers cannot
starve a writer. See docs/protocol.md, "Readers and writers".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..acquiring.counted_waits import await_for, wait_for
from ..acquiring.readers_drain import ReadersDrain
from ..wire import permits, validation
from .permit_set import CountedClient, PermitHolder, PermitSet

if TYPE_CHECKING:
    from ..leases.lease import Lease, LostCallback
    from ..options import AcquireOptions
    from ..wire.item import LockInfo

# Readers at once by default: one BatchGetItem reads them with the write item (at most 99).
DEFAULT_MAX_READERS = 32
"""Readers that may hold a readers-writer lock at once unless ``max_readers=`` says otherwise."""


class ReadersWriterLock:
    """Shared readers (``acquire_read``) or one exclusive writer (``acquire_write``) of one name.

    A reader's lease has ``.permit`` (its reader permit) and that permit's token; the writer's
    lease is the write item's, whose token grows from writer to writer (the one a fenced save checks).
    Do not take the write lock while holding a read lock of the same name: the writer would wait for
    itself until its timeout.
    """

    def __init__(
        self,
        client: CountedClient,
        name: str,
        *,
        max_readers: int = DEFAULT_MAX_READERS,
        sort_key: str | None = None,
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
        )

    def __repr__(self) -> str:
        return f"<ReadersWriterLock {self.name!r} max_readers={self.max_readers}>"

    def acquire_read(
        self,
        *,
        timeout: float | None = None,
        lease_duration: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
    ) -> Lease:
        """Wait until no writer holds or waits for the lock and a reader permit is ours; its lease."""
        return self._readers.acquire(self._readers.options(lease_duration, data, on_lost), timeout, self._write_id)

    def try_acquire_read(
        self,
        *,
        lease_duration: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
    ) -> Lease | None:
        """One round, never waiting: a reader's lease, or None while a writer is in or all permits are held."""
        return self._readers.try_acquire(self._readers.options(lease_duration, data, on_lost), self._write_id)

    async def aacquire_read(
        self,
        *,
        timeout: float | None = None,
        lease_duration: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
    ) -> Lease:
        """:meth:`acquire_read` for coroutines."""
        options = self._readers.options(lease_duration, data, on_lost)
        return await self._readers.aacquire(options, timeout, self._write_id)

    def acquire_write(
        self,
        *,
        timeout: float | None = None,
        lease_duration: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
    ) -> Lease:
        """Take the write item (keeping new readers out), then wait for the readers in place to leave; its lease.

        When ``timeout`` runs out the write item is released and LockTimeout names who was in the way.
        """
        validation.check_timeout(timeout)
        options = self._write_options(lease_duration, data, on_lost)
        state, clock = self._client.process_state, self._client.clock
        deadline = None if timeout is None else clock.monotonic() + timeout
        writer = state.acquirer.acquire(self._write_id, options, timeout)
        try:
            drain = self._drain(writer, deadline)
            if not drain.needed:
                return writer
            return wait_for(drain, timeout, clock=clock, closed=state.closed, ensure_open=state.ensure_open)
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
    ) -> Lease:
        """:meth:`acquire_write` for coroutines; cancelling it releases the write item."""
        validation.check_timeout(timeout)
        options = self._write_options(lease_duration, data, on_lost)
        state, clock = self._client.process_state, self._client.clock
        deadline = None if timeout is None else clock.monotonic() + timeout
        writer = await state.async_acquirer.acquire(self._write_id, options, timeout)
        try:
            drain = self._drain(writer, deadline)
            if not drain.needed:
                return writer
            return await await_for(drain, timeout, clock=clock, calls=state.calls, ensure_open=state.ensure_open)
        except BaseException:
            await writer.arelease(best_effort=True)
            raise

    def readers(self) -> list[PermitHolder]:
        """The reader permits in use now (one consistent BatchGetItem)."""
        return self._readers.holders()

    def writer(self) -> LockInfo | None:
        """The write item as stored now (a consistent read): held by a writer unless released; None if none."""
        return self._client.store.read(self._write_id)

    def _write_options(
        self, lease_duration: float | None, data: bytes | None, on_lost: LostCallback | None
    ) -> AcquireOptions:
        return self._client.call_checks.acquire_options(self._write_id, None, lease_duration, True, data, on_lost)

    def _drain(self, writer: Lease, deadline: float | None) -> ReadersDrain:
        return ReadersDrain(
            writer=writer,
            what=self._readers.what,
            count=self.max_readers,
            reader_ids=self._readers.ids_up_to,
            store=self._client.store,
            layout=self._client.layout,
            observations=self._client.process_state.observations,
            clock=self._client.clock,
            refresh_period=self._client.refresh_period,
            deadline=deadline,
        )
