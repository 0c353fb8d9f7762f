"""LockClient's awaitable methods for one lock: aacquire, atry_acquire, arelease, aextend, aget (a base class).

Each checks its arguments as its sync counterpart does, then waits as a
coroutine (:mod:`.async_acquirer`) or makes its one short call on the
client's call threads (:mod:`.call_threads`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from .wire import validation

if TYPE_CHECKING:
    from .leases.lease import Lease, LostCallback
    from .options import CallChecks
    from .process_state import ProcessState
    from .wire.item import LockInfo


class AsyncMethods:
    """The client's operations that talk to DynamoDB, awaitable; waiting costs a coroutine, not a thread."""

    call_checks: CallChecks
    process_state: ProcessState

    if TYPE_CHECKING:  # LockClient's sync methods, which the awaitable ones run on the call threads

        def get(self, key: str, *, sort_key: str | None = None) -> LockInfo | None: ...

        def extend(self, lease: Lease, lease_duration: float | None = None) -> None: ...

        def release(self, lease: Lease, *, best_effort: bool = False) -> bool: ...

    async def aacquire(
        self,
        key: str,
        *,
        sort_key: str | None = None,
        timeout: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
        owner_name: str | None = None,
        lease_duration: float | None = None,
        keep_alive: bool = True,
        reentrant: bool = False,
    ) -> Lease:
        """:meth:`acquire` for coroutines: waiting is ``asyncio.sleep``; one event loop's coroutines queue for a key.

        Of the coroutines of one event loop waiting for the same key, one at a
        time asks DynamoDB (first come, first served); while this client holds
        the lock they wait for its release without a request. ``reentrant``: the calling task's hold.
        """
        lock_id = self.call_checks.lock_id(key, sort_key)
        options = self.call_checks.acquire_options(lock_id, owner_name, lease_duration, keep_alive, data, on_lost)
        validation.check_timeout(timeout)
        return await self.process_state.aacquire(lock_id, options, timeout, reentrant=reentrant)

    async def atry_acquire(
        self,
        key: str,
        *,
        sort_key: str | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
        owner_name: str | None = None,
        lease_duration: float | None = None,
        keep_alive: bool = True,
        reentrant: bool = False,
    ) -> Lease | None:
        """:meth:`try_acquire` for coroutines."""
        lock_id = self.call_checks.lock_id(key, sort_key)
        options = self.call_checks.acquire_options(lock_id, owner_name, lease_duration, keep_alive, data, on_lost)
        self.process_state.ensure_open()
        return await self.process_state.atry_acquire(lock_id, options, reentrant=reentrant)

    async def arelease(self, lease: Lease, *, best_effort: bool = False) -> bool:
        """:meth:`release` for coroutines; it is sent even if the caller is cancelled meanwhile."""
        if lease.state == "released":  # as release() answers, and without the call threads a close shut down
            return False
        releasing = self.process_state.reentrancy.releasing(lease, best_effort=best_effort)
        if releasing is None:
            return False  # another lease of the hold releases the lock: no request, no thread
        release = functools.partial(self.release, releasing, best_effort=best_effort)
        return await self.process_state.calls.run(release, even_if_cancelled=True)

    async def aextend(self, lease: Lease, lease_duration: float | None = None) -> None:
        """:meth:`extend` for coroutines; it is sent even if the caller is cancelled meanwhile."""
        await self.process_state.calls.run(
            functools.partial(self.extend, lease, lease_duration), even_if_cancelled=True
        )

    async def aget(self, key: str, *, sort_key: str | None = None) -> LockInfo | None:
        """:meth:`get` for coroutines."""
        self.call_checks.lock_id(key, sort_key)
        return await self.process_state.calls.run(functools.partial(self.get, key, sort_key=sort_key))
