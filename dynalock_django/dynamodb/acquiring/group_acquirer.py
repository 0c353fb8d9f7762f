"""Acquiring many locks, all or none: sends what a :class:`.GroupAcquisition` decides, and grants the leases.

Request budget: up to 100 free keys are one TransactWriteItems (each key's
update is the single acquire's, :func:`.writes.acquire`) and one consistent
BatchGetItem for the fencing tokens it issued (a transaction returns no
attributes). A cancelled transaction carries the items that refused it;
waiting reads only those keys. More keys go in chunks of 100 in sorted order;
when a later chunk is refused, the earlier ones are released before waiting.

On a store without transactions, each chunk's keys are acquired one by one
in sorted order with the single acquire's write; a refusal releases every
key taken so far before waiting.

Deadlines, the circuit breaker and answers that come after a lease ran out
work as for a single acquire (:mod:`.acquirer`); a group is granted only if
its earliest lease has time left after the last answer (:mod:`.group_plan`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import telemetry
from ..aws import botocore_errors, deadlines
from ..aws.store import Cancelled, TransactionsUnsupported
from ..clock import Instant
from ..exceptions import CircuitOpen, DynamoDBError, DynamoDBUnavailable
from ..wire import writes
from ..wire.writes import Stamp
from . import wait_loop
from .group_plan import GroupAcquisition
from .plan import Join, ran_out
from .unanswered_cleanup import in_background
from .wait_loop import PlannedRound

if TYPE_CHECKING:
    from ..leases.lease import Lease
    from ..options import AcquireOptions, AcquireRequest
    from ..wire.layout import LockId
    from .acquirer import Acquirer
    from .line_seats import Seat
    from .parts import EngineParts
    from .plan import UnansweredWrites


class GroupAcquirer:
    def __init__(self, parts: EngineParts, acquirer: Acquirer) -> None:
        self.parts = parts
        self._acquirer = acquirer

    @telemetry.traced_acquire("dynalock.acquire_many")
    def acquire(self, request: AcquireRequest) -> list[Lease]:
        options, timeout = request.options, request.timeout
        deadline = None if timeout is None else self.parts.clock.monotonic() + timeout
        seats = self.parts.seats.own_seats(request.lock_ids)
        plan = self.plan(request.lock_ids, deadline, seats)
        try:
            round_ = PlannedRound(plan, functools.partial(self.attempt, plan, options))
            leases = wait_loop.wait(
                round_, self.parts, ready=functools.partial(self._wait_until_free_here, plan, deadline)
            )
        finally:
            self.clean_up(plan, options)
            self.parts.seats.vacate_all(seats, deadline)
        if leases is None:
            raise plan.gave_up(timeout)
        return leases

    @telemetry.traced_acquire("dynalock.acquire_many")
    def try_acquire(self, request: AcquireRequest) -> list[Lease] | None:
        lock_ids, options = request.lock_ids, request.options
        if any(self.parts.holdings.get(lock_id) is not None for lock_id in lock_ids):
            return None  # held by this very client: no need to ask DynamoDB
        plan = self.plan(lock_ids, deadline=self.parts.clock.monotonic())  # an answer now: no retry inside botocore
        try:
            leases = self.attempt(plan, options)
            if leases is None and not plan.holders() and plan.error is None:
                leases = self.attempt(plan, options)  # released or deleted as we asked: one more try
        finally:
            self.clean_up(plan, options)
        if plan.error is not None:
            raise plan.error
        return leases

    def plan(
        self, lock_ids: Sequence[LockId], deadline: float | None, seats: dict[LockId, Seat] | None = None
    ) -> GroupAcquisition:
        """The plan of one acquire_many; ``seats``: a wait's own, one per key, to stand in the line of those held."""
        return GroupAcquisition(
            lock_ids,
            self.parts.observations,
            refresh_period=self.parts.refresh_period,
            deadline=deadline,
            seats=seats,
            timing=self.parts.seats.timing,
        )

    def _wait_until_free_here(self, plan: GroupAcquisition, deadline: float | None) -> bool:
        """Wait, without requests, while other threads of this client hold any of the keys; False at the deadline."""
        for lock_id in plan.lock_ids:
            if not self.parts.holdings.wait_until_free(lock_id, deadline):
                plan.held_locally(lock_id, self.parts.holdings.holder(lock_id))
                return False
        return True

    def attempt(self, plan: GroupAcquisition, options: AcquireOptions) -> list[Lease] | None:
        """Read the keys in the way, then, if none still is, write every chunk; the leases, or None (all released).

        CircuitOpen is raised (after releasing what it took): DynamoDB did not answer the last calls.
        """
        plan.new_round()
        taken: list[Lease] = []
        left = plan.deadline - self.parts.clock.monotonic() if plan.deadline is not None else None
        try:
            with deadlines.within(left):
                if self._attempt(plan, options, taken):
                    return taken
        except CircuitOpen:
            self._release(taken)
            raise
        except DynamoDBUnavailable:
            pass  # recorded by the plan: back off
        except BaseException:
            self._release(taken)
            raise
        self._release(taken)  # never hold some keys while waiting for others
        return None

    def _attempt(self, plan: GroupAcquisition, options: AcquireOptions, taken: list[Lease]) -> bool:
        """One round; True when every chunk was taken (into ``taken``)."""
        now = self.parts.clock.monotonic()
        to_line, to_read = plan.to_line(now), plan.to_read(now)
        for lock_id, step in to_line.items():  # a key found held: into its line, or keeping our place there
            try:
                line = step.line if isinstance(step, Join) else None
                plan.wrote_line(lock_id, *self.parts.seats.send(lock_id, plan.plans[lock_id].seat, line))
            except DynamoDBUnavailable as error:
                plan.failed([lock_id], error)
                raise
        if to_read:
            try:  # one GetItem for one key, one BatchGetItem per 100 for more
                found = (
                    {to_read[0]: self.parts.store.read(to_read[0])}
                    if len(to_read) == 1
                    else self.parts.store.read_many(to_read)
                )
            except DynamoDBUnavailable as error:
                plan.failed(to_read, error)  # so the round backs off, as a failed write does
                raise
            seen = Instant.read(self.parts.clock)
            for lock_id, current in found.items():
                plan.found(lock_id, current, seen)
        now = self.parts.clock.monotonic()
        if plan.to_read(now) or plan.to_line(now):
            return False
        for chunk in plan.chunks:
            leases = self._take(plan, chunk, options)
            if leases is None:
                return False
            taken.extend(leases)
        if not all(lease.is_held() for lease in taken):  # an earlier chunk's ran out while later ones were taken
            plan.ran_out_while_taking()
            return False
        return True

    def _take(self, plan: GroupAcquisition, chunk: Sequence[LockId], options: AcquireOptions) -> list[Lease] | None:
        if len(chunk) == 1:  # the single acquire's write returns its token: one request, not two
            return self._one_by_one(plan, chunk, options)
        try:
            return self._transact(plan, chunk, options)
        except TransactionsUnsupported:
            return self._one_by_one(plan, chunk, options)

    def _transact(self, plan: GroupAcquisition, chunk: Sequence[LockId], options: AcquireOptions) -> list[Lease] | None:
        """One TransactWriteItems of the single acquire's writes, then one read for the tokens it issued."""
        steps = plan.writes(chunk, self.parts.clock.monotonic())
        stamps = [Stamp.new(options.owner_name, options.lease_duration, self.parts.clock) for _ in chunk]
        requests = [
            writes.in_transaction(step.request(self.parts.layout, lock_id, stamp, options))
            for lock_id, stamp, step in zip(chunk, stamps, steps, strict=True)
        ]
        try:
            self.parts.store.transact(requests)
        except Cancelled as cancelled:
            found = {chunk[position]: refused.current for position, refused in cancelled.refused.items()}
            if len(found) < len(chunk) or not all(map(Stamp.landed_in, stamps, found.values())):
                seen = Instant.read(self.parts.clock)
                for lock_id, current in found.items():
                    plan.found(lock_id, current, seen)
                return None
            # A retry (inside botocore) of a transaction that had landed, on a store that ignored its
            # ClientRequestToken: every item refusing it carries our stamp, and its token.
        except DynamoDBError as error:
            self._unanswered(plan, chunk, stamps, error, landed=botocore_errors.may_have_landed(error))
            raise
        else:
            try:
                found = self.parts.store.read_many(chunk)
            except DynamoDBError as error:  # the transaction landed: the next round's condition finds it ours
                self._unanswered(plan, chunk, stamps, error, landed=True)
                raise
        plan.taken_out_of_line(chunk)
        leases: list[Lease] = []
        # Counted from when the transaction was sent, as a single acquire's lease: a late answer grants nothing.
        too_late = ran_out(min(stamp.started for stamp in stamps), options.lease_duration, self.parts.clock.monotonic())
        for lock_id, stamp, step in zip(chunk, stamps, steps, strict=True):
            current = found[lock_id]
            if too_late and stamp.landed_in(current) and current.fencing_token is not None:
                plan.answered_too_late(lock_id, stamp.version, stamp.started)
            elif stamp.landed_in(current) and current.fencing_token is not None:
                plan.plans[lock_id].unanswered.clear()
                leases.append(
                    self._acquirer.grant(
                        lock_id,
                        stamp.version,
                        current.fencing_token,
                        stamp.started,
                        options,
                        taken_over=step.may_take_over,
                        waiters=current.waiters,  # as a single grant's: the queue the write found
                    )
                )
            else:  # changed hands between the commit and the read (a forced release, a takeover): start again
                plan.found(lock_id, current, Instant.read(self.parts.clock))
        if len(leases) < len(chunk):
            self._release(leases)
            return None
        return leases

    @staticmethod
    def _unanswered(
        plan: GroupAcquisition,
        chunk: Sequence[LockId],
        stamps: Sequence[Stamp],
        error: DynamoDBError,
        *,
        landed: bool,
    ) -> None:
        if landed:
            for lock_id, stamp in zip(chunk, stamps, strict=True):
                plan.plans[lock_id].unanswered.add(stamp.version, stamp.started)
        plan.failed(chunk, error)

    def _one_by_one(
        self, plan: GroupAcquisition, chunk: Sequence[LockId], options: AcquireOptions
    ) -> list[Lease] | None:
        """The fallback without transactions: each key's single acquire write, in sorted order."""
        leases: list[Lease] = []
        try:
            for lock_id in chunk:
                lease = self._acquirer.attempt(plan.plans[lock_id], options)
                if lease is None:
                    plan.attempted(lock_id)
                    self._release(leases)
                    return None
                leases.append(lease)
        except DynamoDBUnavailable as error:
            plan.failed([lock_id], error)
            self._release(leases)
            raise
        return leases

    def _release(self, leases: list[Lease]) -> None:
        if leases:
            self.parts.lease_writer.release_all(leases, best_effort=True)
            leases.clear()

    def clean_up(self, plan: GroupAcquisition, options: AcquireOptions) -> None:
        """Release what unanswered writes may have left: now if the deadline allows, else in one background thread."""
        if not any(key_plan.unanswered for key_plan in plan.plans.values()):
            return
        left = plan.deadline - self.parts.clock.monotonic() if plan.deadline is not None else None
        if left is None or left > 0:
            with deadlines.within(left):
                self.abandon(plan, options)
            return
        unanswered = {lock_id: key_plan.unanswered.copy() for lock_id, key_plan in plan.plans.items()}
        for key_plan in plan.plans.values():
            key_plan.unanswered.clear()
        in_background(self.parts.clock, functools.partial(self._abandon_all, unanswered, options))

    def abandon(self, plan: GroupAcquisition, options: AcquireOptions) -> None:
        self._abandon_all({lock_id: key_plan.unanswered for lock_id, key_plan in plan.plans.items()}, options)

    def _abandon_all(self, unanswered: dict[LockId, UnansweredWrites], options: AcquireOptions) -> None:
        for lock_id, versions in unanswered.items():
            with contextlib.suppress(DynamoDBError):
                self._acquirer.abandon(lock_id, versions, options)
