"""LockClient's face for one lock (a base class): take it, keep it, give it back, look at it, sync and awaitable.

Each verb checks its call's options once into an :class:`.AcquireRequest`
and hands it to the engine (:mod:`.acquirer`, or :mod:`.async_acquirer` for
coroutines, whose waiting costs a coroutine, not a thread); the short
awaitable calls run their sync counterparts on the client's call threads
(:mod:`.call_threads`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import TYPE_CHECKING

from .clock import Instant
from .leases.lease import Lease, LostCallback, detached_handle
from .wire import validation

if TYPE_CHECKING:
    from .aws.store import LockStore
    from .clock import Clock
    from .options import CallChecks
    from .process_state import ProcessState
    from .telemetry import Described
    from .wire.item import LockInfo


class LockMethods:
    """One lock's verbs; the client provides its checks, store, clock and process state."""

    call_checks: CallChecks
    process_state: ProcessState
    store: LockStore
    clock: Clock

    def acquire(
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
        described: Described | None = None,
    ) -> Lease:
        """Wait until the lock is ours and return its lease.

        ``timeout`` is in seconds (None waits as long as it takes); when it runs out, LockTimeout
        says who holds the lock. A lock whose holder stopped renewing is taken over once its record
        version number has stood unchanged for the item's lease duration on our clock, or, with
        ``max_clock_skew`` (a bound on how far any two clients' wall clocks differ), at once if its
        last write is older than its lease plus that.

        ``owner_name`` and ``lease_duration`` replace the client's for this lock. With
        ``keep_alive=False`` the lease is detached: its owner renews and releases it from elsewhere
        through :meth:`lease`; this client neither renews it nor releases it on close, and its
        threads do not wait for it locally. Asked by its holder: WouldDeadlock, or with ``reentrant``
        a lease on the hold, at no request (docs/protocol.md, "Reentrant locks").
        """
        lock_id = self.call_checks.lock_id(key, sort_key)
        request = self.call_checks.request(
            lock_id, timeout, owner_name, lease_duration, keep_alive, data, on_lost, described=described
        )
        return self.process_state.acquire(request, reentrant=reentrant)

    def try_acquire(
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
        described: Described | None = None,
    ) -> Lease | None:
        """One attempt, never waiting: the lease, or None when someone holds the lock.

        Repeated calls (and :meth:`get`) remember what they saw, so a lock whose holder died is
        taken over by the first call the takeover rule allows (see :meth:`acquire`). Raises
        DynamoDBUnavailable when DynamoDB cannot answer. The other options are :meth:`acquire`'s.
        """
        lock_id = self.call_checks.lock_id(key, sort_key)
        request = self.call_checks.request(
            lock_id, 0.0, owner_name, lease_duration, keep_alive, data, on_lost, described=described
        )
        self.process_state.ensure_open()
        return self.process_state.try_acquire(request, reentrant=reentrant)

    @contextlib.contextmanager
    def lock(
        self,
        key: str,
        *,
        sort_key: str | None = None,
        timeout: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
        reentrant: bool = False,
    ) -> Iterator[Lease]:
        """``with client.lock(key) as lease:`` acquire, then release at the end of the block.

        If the block succeeds but the lease was lost meanwhile, LockLost is raised at the end: the
        block was not protected for all of its run. ``reentrant``: as :meth:`acquire`'s (an inner
        block in the holding context shares the hold; the outermost block's end releases the lock).
        """
        with self.acquire(
            key, sort_key=sort_key, timeout=timeout, data=data, on_lost=on_lost, reentrant=reentrant
        ) as lease:
            yield lease

    def extend(self, lease: Lease, lease_duration: float | None = None) -> None:
        """Renew ``lease`` now, optionally changing its lease duration; LockLost if it is gone.

        A detached lease (``keep_alive=False``) is renewed even when this
        object believes it ran out: its owner may renew late, and the write's
        condition (owner and fencing token) decides whether it still holds it.
        """
        if lease_duration is not None:
            lease_duration = self.call_checks.lease_duration(lease_duration, keep_alive=lease.keep_alive)
        self.process_state.lease_writer.renew(lease, lease_duration)
        self.process_state.heartbeat.wake()

    def release(self, lease: Lease, *, best_effort: bool = False) -> bool:
        """Release ``lease``; True when this call released it.

        Raises LockLost when the lock is no longer ours (taken over, or
        released by someone else): our release never changes another
        holder's lock. A lease whose safe time ran out is still released if
        nobody took it meanwhile. With ``best_effort=True``, LockLost and
        DynamoDB errors are logged and give False. Releasing twice is a no-op,
        and so is releasing a holding its owner released already (through
        another handle on a detached lease), or a reentrant hold's lease but its last: False.
        """
        state = self.process_state
        releasing = state.reentrancy.releasing(lease, best_effort=best_effort)  # None: a reentrant hold's but its last
        return releasing is not None and state.lease_writer.release(releasing, best_effort=best_effort)

    def force_release(self, lock: LockInfo, *, released_by: str, described: Described | None = None) -> LockInfo:
        """Release someone else's lock (an operator's action), and return it as released.

        Conditioned on the holding in ``lock``, as read by the operator (its
        owner and fencing token; heartbeats in between do not matter): if the
        lock changed hands or was released since, LockNotAcquired is raised and
        nothing changes. ``released_by`` is stored so the holder learns who did it.
        """
        self.call_checks.lock_id(lock.key, lock.sort_key)
        described = self.call_checks.described(described)
        return self.process_state.operator.force_release(lock, released_by=released_by, described=described)

    def take_over(
        self,
        lock: LockInfo,
        *,
        data: bytes | None = None,
        owner_name: str | None = None,
        lease_duration: float | None = None,
        keep_alive: bool = True,
        on_lost: LostCallback | None = None,
        dequeue: Sequence[str] = (),
        unchanged: bool = False,
        described: Described | None = None,
    ) -> Lease:
        """Take someone else's lock now (an operator's or a user's action), and return our lease.

        One conditional write, granted only if the lock is still the holding
        in ``lock`` as read (owner and fencing token, as :meth:`force_release`
        checks): it issues the next fencing token. If the lock changed hands
        or was released since, LockNotAcquired is raised and nothing changes.
        The previous holder finds out at its next renewal. ``dequeue``: waiters of
        ``lock.waiters`` the same write takes out of the queue (the taker, those
        gone). ``unchanged``: only if the item is still exactly as read (its record version), not
        merely the same holding: for handing a lock that looked free or expired to the next in
        line, never from a holder that has renewed since. The other options are :meth:`acquire`'s.
        """
        lock_id = self.call_checks.lock_id(lock.key, lock.sort_key)
        request = self.call_checks.request(
            lock_id, 0.0, owner_name, lease_duration, keep_alive, data, on_lost, described=described
        )
        self.process_state.ensure_open()
        return self.process_state.operator.take_over(lock, request.options, dequeue=list(dequeue), unchanged=unchanged)

    def get(self, key: str, *, sort_key: str | None = None) -> LockInfo | None:
        """The lock item as stored now (a consistent read), or None if there is none.

        Like a refused acquire, it remembers the holder's version and when it was first seen, so
        :meth:`available_in` can tell when this client may take over a holder that stopped renewing.
        """
        lock_id = self.call_checks.lock_id(key, sort_key)
        info = self.store.read(lock_id)
        if info is not None:
            self.process_state.observations.saw(lock_id, info, Instant.read(self.clock))
        return info

    def available_in(self, lock: LockInfo | None) -> float:
        """Seconds until this client may take ``lock`` (as read by :meth:`get`); no request.

        0 when there is no item, it is released, or its version has stood for the item's lease
        since this client first saw it; the whole lease when this client has not seen this version
        before; with ``max_clock_skew``, also 0 once the holder's last write is older than its
        lease plus that.
        """
        return self.process_state.observations.takeover_in(lock, Instant.read(self.clock))

    def lease(
        self,
        key: str,
        *,
        owner_name: str,
        fencing_token: int,
        sort_key: str | None = None,
        lease_duration: float | None = None,
    ) -> Lease:
        """A handle on a detached lock granted elsewhere to ``owner_name`` under ``fencing_token``; no request.

        ``extend()`` renews it and ``release()`` releases it, each with one
        write conditioned on that owner and token (not on a record version:
        the owner renews through many processes). It counts as held only
        after a successful ``extend()``.
        """
        lock_id = self.call_checks.lock_id(key, sort_key)
        validation.check_name("owner_name", owner_name)
        validation.check_fencing_token(fencing_token)
        duration = self.call_checks.lease_duration(lease_duration, keep_alive=False)
        return detached_handle(
            self, self.clock, lock_id, owner_name=owner_name, fencing_token=fencing_token, lease_duration=duration
        )

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
        described: Described | None = None,
    ) -> Lease:
        """:meth:`acquire` for coroutines: waiting is ``asyncio.sleep``; one event loop's coroutines queue for a key.

        Of the coroutines of one event loop waiting for the same key, one at a
        time asks DynamoDB (first come, first served); while this client holds
        the lock they wait for its release without a request.
        """
        lock_id = self.call_checks.lock_id(key, sort_key)
        request = self.call_checks.request(
            lock_id, timeout, owner_name, lease_duration, keep_alive, data, on_lost, described=described
        )
        return await self.process_state.aacquire(request, reentrant=reentrant)

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
        described: Described | None = None,
    ) -> Lease | None:
        """:meth:`try_acquire` for coroutines."""
        lock_id = self.call_checks.lock_id(key, sort_key)
        request = self.call_checks.request(
            lock_id, 0.0, owner_name, lease_duration, keep_alive, data, on_lost, described=described
        )
        self.process_state.ensure_open()
        return await self.process_state.atry_acquire(request, reentrant=reentrant)

    @contextlib.asynccontextmanager
    async def alock(
        self,
        key: str,
        *,
        sort_key: str | None = None,
        timeout: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
        reentrant: bool = False,
    ) -> AsyncIterator[Lease]:
        """``async with client.alock(key) as lease:`` :meth:`lock` for coroutines: :meth:`aacquire`, then
        :meth:`arelease` at the block's end by :mod:`.block_end`'s rule (its exception wins; LockLost if the lease
        was lost; an unanswered release after success stands). Cancelled while waiting, it holds nothing.
        """
        lease = await self.aacquire(
            key, sort_key=sort_key, timeout=timeout, data=data, on_lost=on_lost, reentrant=reentrant
        )
        async with lease:
            yield lease

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
