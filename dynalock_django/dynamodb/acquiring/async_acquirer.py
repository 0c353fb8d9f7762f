"""Acquiring from a coroutine: the sync acquirers' steps, each one short call on the client's call threads.

The same plans decide (:mod:`.plan`, :mod:`.group_plan`), and
each attempt is the sync acquirer's own (:meth:`.Acquirer.attempt`,
:meth:`.GroupAcquirer.attempt`): a request or a few, never a wait. What
differs is only the waiting: a pause on the event loop between attempts
(:func:`.clock.pause`: ``asyncio.sleep``, or a move of a virtual clock), and
:mod:`.turns` while this client holds the lock, so a waiting
coroutine costs no thread. A lease won by an attempt whose caller was
cancelled meanwhile is released, not leaked; a waiting coroutine cancelled
while its attempt is in flight returns when the attempt does, so that only
the waiter whose turn it is touches the process's seat in the line.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .. import telemetry
from ..clock import pause
from ..exceptions import ClientClosed

if TYPE_CHECKING:
    from ..aws.call_threads import CallThreads
    from ..clock import Clock
    from ..leases.holdings import Holdings
    from ..leases.lease import Lease
    from ..options import AcquireOptions
    from ..wire.layout import LockId
    from .acquirer import Acquirer
    from .group_acquirer import GroupAcquirer
    from .group_plan import GroupAcquisition
    from .observations import Observations
    from .plan import Acquisition
    from .turns import Turns


class AsyncAcquirer:
    def __init__(
        self,
        *,
        acquirer: Acquirer,
        group_acquirer: GroupAcquirer,
        observations: Observations,
        holdings: Holdings,
        calls: CallThreads,
        turns: Turns,
        clock: Clock,
        ensure_open: Callable[[], None],
    ) -> None:
        self._acquirer = acquirer
        self._group_acquirer = group_acquirer
        self._observations = observations
        self._holdings = holdings
        self._calls = calls
        self._turns = turns
        self._clock = clock
        self._ensure_open = ensure_open

    @telemetry.traced_acquire("dynalock.acquire")
    async def acquire(self, lock_id: LockId, options: AcquireOptions, timeout: float | None) -> Lease:
        deadline = None if timeout is None else self._clock.monotonic() + timeout
        trying = timeout == 0  # a try: no line to join (the turn ends it at once, if another coroutine has it)
        seats = self._acquirer.seats
        if not trying:
            seats.arrive(lock_id)  # the process's seat is kept until its last waiter departs
        try:
            async with self._turns.turn(lock_id, deadline) as my_turn:
                plan, lease = self._acquirer.plan(lock_id, deadline, waiting=my_turn and not trying), None
                try:
                    if not my_turn:
                        self._acquirer.held_here(plan)
                    else:
                        lease = await self._wait_and_attempt(plan, options, deadline)
                finally:
                    if plan.unanswered:  # cleaned up now if the deadline allows, else in the background
                        with contextlib.suppress(ClientClosed):  # best effort, as the sync path's: closing ends it
                            await self._calls.run(functools.partial(self._acquirer.clean_up, plan, options))
        finally:
            seat = None if trying else seats.depart(lock_id)
            if seat is not None:  # the last waiter of the process takes the seat out of line, if it is there
                with contextlib.suppress(ClientClosed):
                    vacate = functools.partial(seats.vacate, lock_id, seat, deadline)
                    await self._calls.run(vacate, even_if_cancelled=True)
        if lease is not None:
            return lease
        raise plan.gave_up(timeout)

    async def _wait_and_attempt(
        self, plan: Acquisition, options: AcquireOptions, deadline: float | None
    ) -> Lease | None:
        while True:
            if not await self._turns.wait_until_free(self._holdings, plan.lock_id, deadline):
                self._acquirer.held_here(plan)
                return None
            self._ensure_open()  # a closing client ends the wait above, too
            # Cancelled meanwhile, the attempt (a join, say) is seen to its end before the turn and the seat
            # go to another waiter, or out of line: one request, bounded by its time-out.
            lease = await self._calls.run(
                functools.partial(self._acquirer.attempt_while_waiting, plan, options),
                if_abandoned=_release,
                finish_first=True,
            )
            if lease is not None:
                return lease
            delay = plan.delay(self._clock.monotonic())
            if delay is None:
                return None
            await pause(self._clock, delay)

    async def try_acquire(self, lock_id: LockId, options: AcquireOptions) -> Lease | None:
        return await self._calls.run(
            functools.partial(self._acquirer.try_acquire, lock_id, options), if_abandoned=_release
        )

    @telemetry.traced_acquire("dynalock.acquire_many")
    async def acquire_many(
        self, lock_ids: Sequence[LockId], options: AcquireOptions, timeout: float | None
    ) -> list[Lease]:
        deadline = None if timeout is None else self._clock.monotonic() + timeout
        plan = self._group_acquirer.plan(lock_ids, deadline)
        try:
            while True:
                if not await self._wait_until_free_here(plan, deadline):
                    break
                self._ensure_open()
                leases = await self._calls.run(
                    functools.partial(self._group_acquirer.attempt, plan, options), if_abandoned=_release_all
                )
                if leases is not None:
                    return leases
                delay = plan.delay(self._clock.monotonic())
                if delay is None:
                    break
                await pause(self._clock, delay)
        finally:
            if any(key_plan.unanswered for key_plan in plan.plans.values()):
                with contextlib.suppress(ClientClosed):
                    await self._calls.run(functools.partial(self._group_acquirer.clean_up, plan, options))
        raise plan.gave_up(timeout)

    async def _wait_until_free_here(self, plan: GroupAcquisition, deadline: float | None) -> bool:
        for lock_id in plan.lock_ids:
            if not await self._turns.wait_until_free(self._holdings, lock_id, deadline):
                plan.held_locally(lock_id, self._holdings.holder(lock_id))
                return False
        return True

    async def try_acquire_many(self, lock_ids: Sequence[LockId], options: AcquireOptions) -> list[Lease] | None:
        return await self._calls.run(
            functools.partial(self._group_acquirer.try_acquire, lock_ids, options), if_abandoned=_release_all
        )


def _release(lease: Lease | None) -> None:
    if lease is not None:
        lease.release(best_effort=True)


def _release_all(leases: list[Lease] | None) -> None:
    for lease in leases or ():
        lease.release(best_effort=True)
