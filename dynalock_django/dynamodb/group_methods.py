"""LockClient's methods for many locks at once: acquire_many, try_acquire_many, and their awaitable counterparts."""

from __future__ import annotations

import collections
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from .exceptions import InvalidLockRequest
from .leases.lease_group import LeaseGroup

if TYPE_CHECKING:
    from .leases.lease import Lease, LostCallback
    from .leases.lease_group import LockKey
    from .options import AcquireRequest, CallChecks
    from .process_state import ProcessState
    from .telemetry import Described
    from .wire.layout import LockId, TableLayout


class GroupMethods:
    """Locks taken together, all or none; the client provides its checks and process state."""

    layout: TableLayout
    call_checks: CallChecks
    process_state: ProcessState

    def acquire_many(
        self,
        keys: Iterable[LockKey],
        *,
        timeout: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
        described: Described | None = None,
    ) -> LeaseGroup:
        """Wait until every lock in ``keys`` is ours, and return them as one LeaseGroup; all or none.

        Up to 100 free keys are taken in one TransactWriteItems, each with
        the write, fencing token and takeover rule of :meth:`acquire`. When
        some are held, only those are watched until they are free (or their
        holder stopped renewing), then the whole set is tried again. More than
        100 keys are taken in chunks of 100 in sorted order, and the earlier
        chunks are released before waiting for a later one: a caller never
        holds some of the keys while it waits for others, so callers asking
        for overlapping sets in any order cannot deadlock. ``timeout`` runs
        out with LockTimeout naming every key still held and its holder.
        ``keys`` are strings, or ``(key, sort_key)`` pairs on a table with a
        sort key; ``data`` and ``on_lost`` apply to every member. A key the calling thread or task
        holds already would be waited for by itself: WouldDeadlock at once, naming the keys, without
        a request (a group is not reentrant). ``described``: how telemetry names every member.
        """
        request = self._many(keys, timeout, data, on_lost, described)
        self.process_state.reentrancy.refuse_held(list(request.lock_ids))
        return self._group(self.process_state.group_acquirer.acquire(request))

    def try_acquire_many(
        self,
        keys: Iterable[LockKey],
        *,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
        described: Described | None = None,
    ) -> LeaseGroup | None:
        """One attempt at :meth:`acquire_many`, never waiting: the group, or None when any lock is held."""
        request = self._try_many(keys, data, on_lost, described)
        if request is None:
            return None
        leases = self.process_state.group_acquirer.try_acquire(request)
        return None if leases is None else self._group(leases)

    async def aacquire_many(
        self,
        keys: Iterable[LockKey],
        *,
        timeout: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
        described: Described | None = None,
    ) -> LeaseGroup:
        """:meth:`acquire_many` for coroutines: waiting is ``asyncio.sleep``."""
        request = self._many(keys, timeout, data, on_lost, described)
        self.process_state.reentrancy.refuse_held(list(request.lock_ids))
        return self._group(await self.process_state.async_acquirer.acquire_many(request))

    async def atry_acquire_many(
        self,
        keys: Iterable[LockKey],
        *,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
        described: Described | None = None,
    ) -> LeaseGroup | None:
        """:meth:`try_acquire_many` for coroutines."""
        request = self._try_many(keys, data, on_lost, described)
        if request is None:
            return None
        leases = await self.process_state.async_acquirer.try_acquire_many(request)
        return None if leases is None else self._group(leases)

    def _many(
        self,
        keys: Iterable[LockKey],
        timeout: float | None,
        data: bytes | None,
        on_lost: LostCallback | None,
        described: Described | None,
    ) -> AcquireRequest:
        if isinstance(keys, str | bytes):
            raise InvalidLockRequest("keys must be a list of keys, not one string: acquire_many([key, ...]).")
        lock_ids = [self._lock_id(key) for key in keys]
        if not lock_ids:
            raise InvalidLockRequest("acquire_many needs at least one key.")
        duplicates = sorted({lock_id[0] for lock_id, count in collections.Counter(lock_ids).items() if count > 1})
        if duplicates:
            raise InvalidLockRequest(
                f"Each key may appear only once in acquire_many; repeated: {', '.join(map(repr, duplicates))}."
            )
        request = self.call_checks.request(lock_ids, timeout=timeout, data=data, on_lost=on_lost, described=described)
        # Not a refusal: the caller may mean to hold them briefly, or know its round trip is faster.
        self.process_state.heartbeat.warn_if_too_many(len(lock_ids))
        return request

    def _try_many(
        self, keys: Iterable[LockKey], data: bytes | None, on_lost: LostCallback | None, described: Described | None
    ) -> AcquireRequest | None:
        """A try's request; None when the calling context holds one of its keys (a try never raises WouldDeadlock)."""
        request = self._many(keys, 0.0, data, on_lost, described)
        self.process_state.ensure_open()
        return None if self.process_state.reentrancy.holds_any(list(request.lock_ids)) else request

    def _lock_id(self, key: LockKey) -> LockId:
        if isinstance(key, tuple):
            if len(key) != 2:
                raise InvalidLockRequest(f"A key with a sort key is a (key, sort_key) pair, not {key!r}.")
            return self.call_checks.lock_id(key[0], key[1])
        return self.call_checks.lock_id(key, None)

    def _group(self, leases: Sequence[Lease]) -> LeaseGroup:
        for lease in leases:  # held by the calling context: its own acquire of one of them would wait for itself
            self.process_state.reentrancy.held(lease, shareable=False)
        return LeaseGroup(self.process_state.group_release, leases)
