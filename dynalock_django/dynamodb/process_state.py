"""A lock client's life in one process: its leases, heartbeat, observations and open/closed state.

Nothing here may be shared with a forked child: the child builds its own
(:mod:`.fork_safety`), and so holds none of its parent's leases.
"""

from __future__ import annotations

import functools
import threading
from typing import TYPE_CHECKING, Protocol

from .acquiring.acquirer import Acquirer
from .acquiring.async_acquirer import AsyncAcquirer
from .acquiring.group_acquirer import GroupAcquirer
from .acquiring.line_seats import LineTiming, Seats
from .acquiring.observations import Observations
from .acquiring.operator_actions import OperatorActions
from .acquiring.parts import EngineParts
from .acquiring.turns import Turns
from .aws.call_threads import CallThreads
from .exceptions import ClientClosed
from .leases.heartbeat import Heartbeat
from .leases.holdings import Holdings
from .leases.lease import LeaseClient
from .leases.lease_group import GroupRelease
from .leases.lease_writes import LeaseWriter
from .leases.reentrancy import Reentrancy

if TYPE_CHECKING:
    from .aws.store import LockStore
    from .clock import Clock
    from .leases.lease import Lease
    from .options import AcquireRequest
    from .wire.layout import TableLayout


class ClientSettings(LeaseClient, Protocol):
    """The settings of the client (a LockClient) whose process state this is."""

    layout: TableLayout
    clock: Clock
    heartbeat_period: float
    renewal_workers: int
    refresh_period: float
    owner_name: str
    delete_on_release: bool
    max_clock_skew: float | None


class ProcessState:
    """What a client holds and knows in this process, and the workers that act on it."""

    def __init__(self, client: ClientSettings, store: LockStore, *, closed: bool) -> None:
        layout, clock = client.layout, client.clock
        self._client = client
        self.clock = clock
        self.closed = threading.Event()
        if closed:
            self.closed.set()
        self.observations = Observations(max_clock_skew=client.max_clock_skew)
        self.holdings = Holdings(clock, self.closed)
        self.reentrancy = Reentrancy(client, self.holdings)
        self.lease_writer = LeaseWriter(store, layout, clock, self.holdings, delete_on_release=client.delete_on_release)
        self.heartbeat = Heartbeat(
            leases=self.holdings.leases,
            renew=self.lease_writer.renew_by_heartbeat,
            expire=self.lease_writer.expire,
            period=client.heartbeat_period,
            workers=client.renewal_workers,
            clock=clock,
            name=f"dynalock-heartbeat-{layout.table_name}",
        )
        # One look per key for all this client's waiters, and one seat in the key's line for the process.
        self.turns = Turns(clock)
        self.seats = Seats(
            store,
            layout,
            clock,
            owner=client,
            timing=LineTiming.for_refresh_period(client.refresh_period),
        )
        # Coroutines: a few threads for their requests (built per process, so a forked child has its own).
        self.calls = CallThreads(name=f"dynalock-call-{layout.table_name}")
        self.parts = EngineParts(
            client=client,
            store=store,
            layout=layout,
            clock=clock,
            refresh_period=client.refresh_period,
            observations=self.observations,
            holdings=self.holdings,
            heartbeat=self.heartbeat,
            lease_writer=self.lease_writer,
            turns=self.turns,
            seats=self.seats,
            calls=self.calls,
            closed=self.closed,
            ensure_open=self.ensure_open,
        )
        self.acquirer = Acquirer(self.parts)
        self.group_acquirer = GroupAcquirer(self.parts, self.acquirer)
        self.operator = OperatorActions(self.parts, self.acquirer)
        self.async_acquirer = AsyncAcquirer(self.parts, self.acquirer, self.group_acquirer)
        self.group_release = GroupRelease(self.lease_writer, self.calls)

    def acquire(self, request: AcquireRequest, *, reentrant: bool) -> Lease:
        """The façade's acquire: the calling context's hold (:mod:`.reentrancy`), else the acquirer's wait."""
        take = functools.partial(self.acquirer.acquire, request)
        return self.reentrancy.acquire(request.lock_id, request.options, reentrant, take)

    def try_acquire(self, request: AcquireRequest, *, reentrant: bool) -> Lease | None:
        """The façade's try_acquire: the calling context's hold, else the acquirer's one attempt."""
        take = functools.partial(self.acquirer.try_acquire, request)
        return self.reentrancy.try_acquire(request.lock_id, request.options, reentrant, take)

    async def aacquire(self, request: AcquireRequest, *, reentrant: bool) -> Lease:
        """:meth:`acquire` for coroutines: the calling task's hold, else the async acquirer's wait."""
        take = functools.partial(self.async_acquirer.acquire, request)
        return await self.reentrancy.aacquire(request.lock_id, request.options, reentrant, take)

    async def atry_acquire(self, request: AcquireRequest, *, reentrant: bool) -> Lease | None:
        """:meth:`try_acquire` for coroutines."""
        take = functools.partial(self.async_acquirer.try_acquire, request)
        return await self.reentrancy.atry_acquire(request.lock_id, request.options, reentrant, take)

    def ensure_open(self) -> None:
        if self.closed.is_set():
            raise ClientClosed(f"{self._client!r} is closed; create a new LockClient.")

    def close(self, *, release: bool, heartbeat_timeout: float) -> bool:
        """Stop the heartbeat and waiters, and end every held lease; False if it was closed already."""
        if self.closed.is_set():
            return False
        self.closed.set()
        self.holdings.wake_waiters()
        self.heartbeat.stop(timeout=heartbeat_timeout)
        for lease in self.holdings.leases():
            if release:
                lease.release(best_effort=True)
            else:
                self.holdings.forget(lease, lost=("the client was closed without releasing", None), superseded=False)
        self.calls.shutdown()
        return True
