"""A semaphore: at most N holders of one name at once, each with its own lease and fencing token.

``client.semaphore("exports", 3)`` is three lock items, ``exports#permit-0``
to ``exports#permit-2`` (:mod:`..wire.permits`), each taken, renewed,
released and taken over exactly as a single lock; see docs/protocol.md,
"Semaphores", for the costs and the waiting rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..wire import permits
from .permit_set import CountedClient, PermitHolder, PermitSet

if TYPE_CHECKING:
    from ..leases.lease import Lease, LostCallback


class Semaphore:
    """N permits of one name; :meth:`acquire` returns the lease of one, with ``.permit`` (its index) and its token.

    The count is stored on every permit's item: a caller asking for another count is refused
    (CountInUse) while a permit of the stored count is held. Threads and coroutines may share one Semaphore.
    ``name_lock``: the plain lock of ``name`` counts as a holder of a count of 1, so the set and that lock
    exclude each other (its holder calls :meth:`.LockClient.exclude_permits`; counted/name_lock.py).
    """

    def __init__(
        self,
        client: CountedClient,
        name: str,
        permit_count: int,
        *,
        sort_key: str | None = None,
        name_lock: bool = False,
    ) -> None:
        permits.check_set("semaphore", name, permit_count, permits.MAX_PERMITS)
        self.name = name
        self.permits = permit_count
        self._set = PermitSet(
            client,
            what=f"semaphore {name!r}",
            name=name,
            suffix=permits.SEMAPHORE_SUFFIX,
            count=permit_count,
            sort_key=sort_key,
            name_lock=name_lock,
        )

    def __repr__(self) -> str:
        return f"<Semaphore {self.name!r} permits={self.permits}>"

    def acquire(
        self,
        *,
        timeout: float | None = None,
        lease_duration: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
    ) -> Lease:
        """Wait until a permit is ours and return its lease; LockTimeout (naming the holders) when ``timeout`` runs out.

        A permit whose holder stopped renewing is taken once its version has stood for its lease on
        our clock, as a single lock is. ``lease_duration``, ``data`` and ``on_lost`` are
        :meth:`LockClient.acquire`'s.
        """
        return self._set.acquire(self._set.request(timeout, lease_duration, data, on_lost))

    def try_acquire(
        self,
        *,
        lease_duration: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
    ) -> Lease | None:
        """One round, never waiting: a permit's lease, or None when all are held."""
        return self._set.try_acquire(self._set.request(0.0, lease_duration, data, on_lost))

    async def aacquire(
        self,
        *,
        timeout: float | None = None,
        lease_duration: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
    ) -> Lease:
        """:meth:`acquire` for coroutines: waiting is ``asyncio.sleep``; cancelling it leaks no permit."""
        return await self._set.aacquire(self._set.request(timeout, lease_duration, data, on_lost))

    async def atry_acquire(
        self,
        *,
        lease_duration: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
    ) -> Lease | None:
        """:meth:`try_acquire` for coroutines."""
        request = self._set.request(0.0, lease_duration, data, on_lost)
        return await self._set.run_in_call_thread(lambda: self._set.try_acquire(request))

    def holders(self) -> list[PermitHolder]:
        """The permits in use now, by index (one consistent BatchGetItem); a holder that died shows until taken."""
        return self._set.holders()

    async def aholders(self) -> list[PermitHolder]:
        """:meth:`holders` for coroutines."""
        return await self._set.run_in_call_thread(self._set.holders)
