"""Acquiring from a coroutine: the sync acquirers' rounds in the coroutine wait loop (:func:`.wait_loop.await_`).

The same plans decide (:mod:`.plan`, :mod:`.group_plan`), and
each attempt is the sync acquirer's own (:meth:`.Acquirer.attempt`,
:meth:`.GroupAcquirer.attempt`): a request or a few, never a wait. What
differs is only the waiting: a pause on the event loop between attempts
(:func:`.clock.pause`: ``asyncio.sleep``, or a move of a virtual clock), and
:mod:`.turns` while this client holds the lock, so a waiting
coroutine costs no thread. A lease won by an attempt whose caller was
cancelled meanwhile is released, not leaked, and so is one won before a
cancel that lands on the call's way out (its clean-up, its turn, its seat); a waiting coroutine cancelled
while its attempt is in flight returns when the attempt does, so that only
the waiter whose turn it is touches the process's seat in the line.
"""

from __future__ import annotations

import contextlib
import functools
from typing import TYPE_CHECKING

from .. import telemetry
from ..exceptions import ClientClosed
from . import wait_loop
from .wait_loop import PlannedRound, release_abandoned

if TYPE_CHECKING:
    from ..leases.lease import Lease
    from ..options import AcquireOptions, AcquireRequest
    from .acquirer import Acquirer
    from .group_acquirer import GroupAcquirer
    from .group_plan import GroupAcquisition
    from .parts import EngineParts
    from .plan import Acquisition


class AsyncAcquirer:
    def __init__(self, parts: EngineParts, acquirer: Acquirer, group_acquirer: GroupAcquirer) -> None:
        self._parts = parts
        self._acquirer = acquirer
        self._group_acquirer = group_acquirer

    @telemetry.traced_acquire("dynalock.acquire")
    async def acquire(self, request: AcquireRequest) -> Lease:
        lock_id, options, timeout = request.lock_id, request.options, request.timeout
        parts = self._parts
        deadline = None if timeout is None else parts.clock.monotonic() + timeout
        trying = timeout == 0  # a try: no line to join (the turn ends it at once, if another coroutine has it)
        if not trying:
            parts.seats.arrive(lock_id)  # the process's seat is kept until its last waiter departs
        lease: Lease | None = None
        try:
            try:
                async with parts.turns.turn(lock_id, deadline) as my_turn:
                    plan = self._acquirer.plan(lock_id, deadline, waiting=my_turn and not trying)
                    try:
                        if not my_turn:
                            self._acquirer.held_here(plan)
                        else:
                            lease = await self._wait(plan, options, deadline)
                    finally:
                        if plan.unanswered:  # cleaned up now if the deadline allows, else in the background
                            await self._clean_up(functools.partial(self._acquirer.clean_up, plan, options))
            finally:
                seat = None if trying else parts.seats.depart(lock_id)
                if seat is not None:  # the last waiter of the process takes the seat out of line, if it is there
                    with contextlib.suppress(ClientClosed):
                        vacate = functools.partial(parts.seats.vacate, lock_id, seat, deadline)
                        await parts.calls.run(vacate, even_if_cancelled=True)
        except BaseException:
            await self._give_back(lease)
            raise
        if lease is not None:
            return lease
        raise plan.gave_up(timeout)

    async def _wait(self, plan: Acquisition, options: AcquireOptions, deadline: float | None) -> Lease | None:
        round_ = PlannedRound(plan, functools.partial(self._acquirer.attempt_while_waiting, plan, options))
        # Cancelled meanwhile, the attempt (a join, say) is seen to its end before the turn and the seat
        # go to another waiter, or out of line: one request, bounded by its time-out.
        ready = functools.partial(self._free_here, plan, deadline)
        return await wait_loop.await_(round_, self._parts, ready=ready, finish_first=True)

    async def _free_here(self, plan: Acquisition, deadline: float | None) -> bool:
        """Wait, without requests, while another holder of this client has the lock; False at the deadline."""
        if await self._parts.turns.wait_until_free(self._parts.holdings, plan.lock_id, deadline):
            return True
        self._acquirer.held_here(plan)
        return False

    async def try_acquire(self, request: AcquireRequest) -> Lease | None:
        try_once = functools.partial(self._acquirer.try_acquire, request)
        return await self._parts.calls.run(try_once, if_abandoned=release_abandoned)

    @telemetry.traced_acquire("dynalock.acquire_many")
    async def acquire_many(self, request: AcquireRequest) -> list[Lease]:
        options, timeout = request.options, request.timeout
        deadline = None if timeout is None else self._parts.clock.monotonic() + timeout
        seats = self._parts.seats.own_seats(request.lock_ids)
        plan = self._group_acquirer.plan(request.lock_ids, deadline, seats)
        leases: list[Lease] | None = None
        try:
            try:
                round_ = PlannedRound(plan, functools.partial(self._group_acquirer.attempt, plan, options))
                ready = functools.partial(self._all_free_here, plan, deadline)
                # Cancelled meanwhile, the attempt (a join, say) is seen to its end before the seats are vacated.
                leases = await wait_loop.await_(round_, self._parts, ready=ready, finish_first=True)
            finally:
                if any(key_plan.unanswered for key_plan in plan.plans.values()):
                    await self._clean_up(functools.partial(self._group_acquirer.clean_up, plan, options))
                if any(seat.may_be_in_line for seat in seats.values()):
                    with contextlib.suppress(ClientClosed):
                        vacate = functools.partial(self._parts.seats.vacate_all, seats, deadline)
                        await self._parts.calls.run(vacate, even_if_cancelled=True)
        except BaseException:
            await self._give_back(leases)
            raise
        if leases is None:
            raise plan.gave_up(timeout)
        return leases

    async def _all_free_here(self, plan: GroupAcquisition, deadline: float | None) -> bool:
        holdings = self._parts.holdings
        for lock_id in plan.lock_ids:
            if not await self._parts.turns.wait_until_free(holdings, lock_id, deadline):
                plan.held_locally(lock_id, holdings.holder(lock_id))
                return False
        return True

    async def try_acquire_many(self, request: AcquireRequest) -> list[Lease] | None:
        try_once = functools.partial(self._group_acquirer.try_acquire, request)
        return await self._parts.calls.run(try_once, if_abandoned=release_abandoned)

    async def _give_back(self, won: Lease | list[Lease] | None) -> None:
        """Release what was won when the call ends without returning it: cancelled (or failed) on its way out,
        after the grant, while it cleaned up, left its turn or vacated its seat. Dropped, it would be held, and
        renewed, by nobody's call. Sent even if cancelled again meanwhile."""
        if won is not None:
            with contextlib.suppress(ClientClosed):
                await self._parts.calls.run(functools.partial(release_abandoned, won), even_if_cancelled=True)

    async def _clean_up(self, clean_up: functools.partial[None]) -> None:
        with contextlib.suppress(ClientClosed):  # best effort, as the sync path's: closing ends it
            await self._parts.calls.run(clean_up)
