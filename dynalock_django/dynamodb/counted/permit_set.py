"""A set of N permits of one name: their lock ids, and taking one (waiting, never waiting, or in a coroutine).

The face of :class:`.PermitRound` for a semaphore's permits and a
readers-writer lock's readers; the item format is in :mod:`..wire.permits`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from ..acquiring.counted_waits import await_for, wait_for
from ..acquiring.permit_round import PermitRound
from ..leases.lease import Lease
from ..wire import permits, validation

if TYPE_CHECKING:
    from ..aws.store import LockStore
    from ..clock import Clock
    from ..leases.lease import LostCallback
    from ..options import AcquireOptions, CallChecks
    from ..process_state import ProcessState
    from ..wire.item import LockInfo
    from ..wire.layout import LockId, TableLayout


T = TypeVar("T")


class CountedClient(Protocol):
    """What a counted lock asks of its client (a LockClient)."""

    call_checks: CallChecks
    process_state: ProcessState
    store: LockStore
    layout: TableLayout
    clock: Clock
    refresh_period: float


@dataclass(frozen=True)
class PermitHolder:
    """A permit in use: its index and its item as read (owner, lease, fencing token)."""

    permit: int
    lock: LockInfo


class PermitSet:
    def __init__(
        self, client: CountedClient, *, what: str, name: str, suffix: str, count: int, sort_key: str | None
    ) -> None:
        self.what = what
        self.name = name
        self.count = count
        self._client = client
        self._suffix = suffix
        self._sort_key = sort_key
        self.ids = self.ids_up_to(count)
        # Read with the set, never written: an item there is a larger set's, under the same name.
        self.beyond = self.ids_up_to(count + 1)[-1]

    def ids_up_to(self, count: int) -> list[LockId]:
        """The lock ids of permits 0 to ``count`` - 1 of this name and kind (a set of another count's too)."""
        return [
            self._client.call_checks.lock_id(permits.permit_key(self.name, self._suffix, index), self._sort_key)
            for index in range(count)
        ]

    def options(self, lease_duration: float | None, data: bytes | None, on_lost: LostCallback | None) -> AcquireOptions:
        options = self._client.call_checks.acquire_options(self.ids[-1], None, lease_duration, True, data, on_lost)
        return dataclasses.replace(options, permits=self.count)

    def round(self, options: AcquireOptions, timeout: float | None, gate: LockId | None = None) -> PermitRound:
        client, state = self._client, self._client.process_state
        return PermitRound(
            what=self.what,
            permit_ids=self.ids,
            options=options,
            acquirer=state.acquirer,
            store=client.store,
            holdings=state.holdings,
            observations=state.observations,
            clock=client.clock,
            refresh_period=client.refresh_period,
            deadline=None if timeout is None else client.clock.monotonic() + timeout,
            beyond=self.beyond,
            layout=client.layout,
            gate=gate,
        )

    def acquire(self, options: AcquireOptions, timeout: float | None, gate: LockId | None = None) -> Lease:
        validation.check_timeout(timeout)
        state = self._client.process_state
        round_ = self.round(options, timeout, gate)
        return wait_for(
            round_,
            timeout,
            clock=self._client.clock,
            closed=state.closed,
            ensure_open=state.ensure_open,
            clean_up=round_.clean_up,
        )

    async def aacquire(self, options: AcquireOptions, timeout: float | None, gate: LockId | None = None) -> Lease:
        validation.check_timeout(timeout)
        state = self._client.process_state
        round_ = self.round(options, timeout, gate)
        return await await_for(
            round_,
            timeout,
            clock=self._client.clock,
            calls=state.calls,
            ensure_open=state.ensure_open,
            clean_up=round_.clean_up,
        )

    def try_acquire(self, options: AcquireOptions, gate: LockId | None = None) -> Lease | None:
        state = self._client.process_state
        state.ensure_open()
        round_ = self.round(options, 0.0, gate)  # an answer now: no retry inside botocore
        try:
            return round_.try_once()
        finally:
            round_.clean_up()

    async def run_in_call_thread(self, call: Callable[[], T]) -> T:
        """One short call (a try, a read) on the client's call threads; a permit it won after a cancel is released."""
        return await self._client.process_state.calls.run(call, if_abandoned=_release_if_lease)

    def holders(self) -> list[PermitHolder]:
        """The permits in use now (one consistent BatchGetItem): every item not released, by permit."""
        found = self._client.store.read_many(self.ids)
        return [
            PermitHolder(index, lock)
            for index, lock_id in enumerate(self.ids)
            if (lock := found[lock_id]) is not None and not lock.is_released
        ]


def _release_if_lease(result: object) -> None:
    if isinstance(result, Lease):
        result.release(best_effort=True)
