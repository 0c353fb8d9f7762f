"""A set of N permits of one name: their lock ids, and taking one (waiting, never waiting, or in a coroutine).

The face of :class:`.PermitRound` for a semaphore's permits and a
readers-writer lock's readers; the item format is in :mod:`..wire.permits`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from ..acquiring.wait_loop import await_for, release_abandoned, wait_for
from ..leases.lease import Lease
from ..wire import permits
from .permit_round import PermitRound

if TYPE_CHECKING:
    from ..aws.store import LockStore
    from ..leases.lease import LostCallback
    from ..options import AcquireRequest, CallChecks
    from ..process_state import ProcessState
    from ..wire.item import LockInfo
    from ..wire.layout import LockId


T = TypeVar("T")


class CountedClient(Protocol):
    """What a counted lock asks of its client (a LockClient)."""

    call_checks: CallChecks
    process_state: ProcessState  # its engine's parts, for this process
    store: LockStore


@dataclass(frozen=True)
class PermitHolder:
    """A permit in use: its index and its item as read (owner, lease, fencing token)."""

    permit: int
    lock: LockInfo


class PermitSet:
    def __init__(
        self,
        client: CountedClient,
        *,
        what: str,
        name: str,
        suffix: str,
        count: int,
        sort_key: str | None,
        name_lock: bool = False,
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
        # The plain lock of the name is a holding of a count of 1 (counted/name_lock.py): read with the set.
        self.name_lock = client.call_checks.lock_id(name, sort_key) if name_lock else None

    def ids_up_to(self, count: int) -> list[LockId]:
        """The lock ids of permits 0 to ``count`` - 1 of this name and kind (a set of another count's too)."""
        return [
            self._client.call_checks.lock_id(permits.permit_key(self.name, self._suffix, index), self._sort_key)
            for index in range(count)
        ]

    def request(
        self, timeout: float | None, lease_duration: float | None, data: bytes | None, on_lost: LostCallback | None
    ) -> AcquireRequest:
        """A call's request for one permit; its data is checked against the longest permit key, the last."""
        checks = self._client.call_checks
        return checks.request(
            self.ids[-1], timeout=timeout, lease_duration=lease_duration, data=data, on_lost=on_lost, permits=self.count
        )

    def round(self, request: AcquireRequest, gate: LockId | None = None) -> PermitRound:
        state, timeout = self._client.process_state, request.timeout
        gate = gate or self.name_lock
        return PermitRound(
            state.parts,
            state.acquirer,
            what=self.what,
            permit_ids=self.ids,
            options=request.options,
            deadline=None if timeout is None else state.parts.clock.monotonic() + timeout,
            beyond=self.beyond,
            gate=gate,
            name_lock=gate is not None and gate == self.name_lock,
        )

    def acquire(self, request: AcquireRequest, gate: LockId | None = None) -> Lease:
        round_ = self.round(request, gate)
        return wait_for(round_, request.timeout, self._client.process_state.parts, round_.clean_up)

    async def aacquire(self, request: AcquireRequest, gate: LockId | None = None) -> Lease:
        round_ = self.round(request, gate)
        return await await_for(round_, request.timeout, self._client.process_state.parts, round_.clean_up)

    def try_acquire(self, request: AcquireRequest, gate: LockId | None = None) -> Lease | None:
        state = self._client.process_state
        state.ensure_open()
        round_ = self.round(request, gate)  # a try's timeout is 0: an answer now, no retry inside botocore
        try:
            return round_.try_once()
        finally:
            round_.clean_up()

    async def run_in_call_thread(self, call: Callable[[], T]) -> T:
        """One short call (a try, a read) on the client's call threads; a permit it won after a cancel is released."""
        return await self._client.process_state.calls.run(call, if_abandoned=release_abandoned)

    def holders(self) -> list[PermitHolder]:
        """The permits in use now (one consistent BatchGetItem): every item not released, by permit."""
        found = self._client.store.read_many(self.ids)
        return [
            PermitHolder(index, lock)
            for index, lock_id in enumerate(self.ids)
            if (lock := found[lock_id]) is not None and not lock.is_released
        ]
