"""Acquiring: sends what an :class:`.Acquisition` decides, sleeps as long as it says, and grants the lease.

Request budget: an uncontended acquire is one conditional UpdateItem that
also issues the fencing token; a refused one carries the holder's item
(one consistent GetItem more only on endpoints that do not return it).
Waiting joins the lock's line (one UpdateItem), then costs the head's
consistent GetItems and every waiter's refreshes (:mod:`.line_seats`); threads
of one client waiting for the same key, or for each other, take turns and send
nothing but the one look (:mod:`.turns`). Writes whose answer was lost are resolved by their
version (a later write's condition, or one read), and released on the way
out when they cannot be.

Deadlines: no request starts after the call's deadline (start + timeout;
``try_acquire``'s is its start), except one that follows an answer (a retry
at once of a lock found free, a read resolving a write whose answer was lost
without a time-out); botocore retries no time-out and starts no retry past
it (:mod:`..aws.deadlines`). A lease is granted only with time left: a write
answered after the lease it won had run out counts as unanswered, and the
next one, sent at once, takes the lock afresh (:mod:`.plan`). Cleaning up after writes whose answer was lost
never keeps a caller past its deadline: it goes to a background thread.
While the circuit breaker is open a wait ends at once (CircuitOpen).
"""

from __future__ import annotations

import functools
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from .. import telemetry
from ..aws import botocore_errors, deadlines
from ..aws.store import Refused
from ..clock import Instant
from ..exceptions import CircuitOpen, DynamoDBError, DynamoDBUnavailable
from ..leases.lease import Lease
from ..leases.lease_record import LeaseRecord
from ..wire import item
from ..wire.display import printable
from ..wire.item import GrantAnswer, LockInfo
from ..wire.waiters import WAITERS, Waiter, parse_waiters
from ..wire.writes import Stamp
from . import wait_loop
from .plan import Acquisition, Join, Refresh, UnansweredWrites, Write, late_answers_message, ran_out
from .unanswered_cleanup import UnansweredCleanup
from .wait_loop import PlannedRound

if TYPE_CHECKING:
    from ..options import AcquireOptions, AcquireRequest
    from ..wire.layout import LockId
    from .line_seats import Seat
    from .parts import EngineParts

logger = logging.getLogger("dynalock_django.acquire")


class Acquirer:
    def __init__(self, parts: EngineParts) -> None:
        self.parts = parts
        self._client = parts.client
        self._store = parts.store
        self._layout = parts.layout
        self._clock = parts.clock
        self._observations = parts.observations
        self._holdings = parts.holdings
        self._heartbeat = parts.heartbeat
        self._refresh_period = parts.refresh_period
        self._turns = parts.turns
        self.seats = parts.seats
        self._unanswered = UnansweredCleanup(parts.store, parts.layout, parts.clock)

    @telemetry.traced_acquire("dynalock.acquire")
    def acquire(self, request: AcquireRequest) -> Lease:
        lock_id, options, timeout = request.lock_id, request.options, request.timeout
        deadline = None if timeout is None else self._clock.monotonic() + timeout
        if timeout == 0:  # a try (the admin's): no turn to wait for, no line to join
            plan = self.plan(lock_id, deadline)
            lease = self._take_turn(plan, options, deadline, my_turn=True)
        else:  # the process's seat is kept until its last waiter is done, who takes it out of line
            seat = self.seats.arrive(lock_id)
            try:
                ticket, my_turn = self._turns.wait_in_thread(lock_id, deadline)
                try:
                    plan = self.plan(lock_id, deadline, seat=seat if my_turn else None)
                    lease = self._take_turn(plan, options, deadline, my_turn=my_turn)
                finally:
                    self._turns.leave(lock_id, ticket)
            finally:
                if (last := self.seats.depart(lock_id)) is not None:
                    self.seats.vacate(lock_id, last, deadline)
        if lease is not None:
            return lease
        raise plan.gave_up(timeout)

    def _take_turn(
        self, plan: Acquisition, options: AcquireOptions, deadline: float | None, *, my_turn: bool
    ) -> Lease | None:
        """Wait for the lock when the turn is ours (else the deadline came first), then clean up."""
        try:
            if not my_turn:
                self.held_here(plan)
                return None
            round_ = PlannedRound(plan, functools.partial(self.attempt_while_waiting, plan, options))
            return wait_loop.wait(round_, self.parts, ready=functools.partial(self._free_here, plan, deadline))
        finally:
            if plan.unanswered:  # writes of ours whose answer was lost: cleaned up now if the deadline allows
                self.clean_up(plan, options)

    def _free_here(self, plan: Acquisition, deadline: float | None) -> bool:
        """Wait, without requests, while another holder of this client has the lock; False at the deadline."""
        if self._holdings.wait_until_free(plan.lock_id, deadline):
            return True
        plan.held_locally(self._holdings.holder(plan.lock_id))
        return False

    def held_here(self, plan: Acquisition) -> None:
        """The deadline came while another holder of this client, or a waiter before us, had the lock's turn."""
        observed = self._observations.get(plan.lock_id)  # a waiter before us still waits: the holder it saw
        plan.held_locally(self._holdings.holder(plan.lock_id) or (observed.info if observed is not None else None))

    @telemetry.traced_acquire("dynalock.acquire")
    def try_acquire(self, request: AcquireRequest) -> Lease | None:
        lock_id, options = request.lock_id, request.options
        if self._holdings.get(lock_id) is not None:
            return None  # held by this very client: no need to ask DynamoDB
        plan = self.plan(lock_id, deadline=self._clock.monotonic())  # an answer now: no retry inside botocore
        try:
            lease = self.attempt(plan, options)
            if lease is None and plan.retry_at_once:  # released or deleted as we asked, or takeable: one more try
                lease = self.attempt(plan, options)
        except DynamoDBUnavailable as unavailable:
            if not plan.unanswered or not _answered_at_once(unavailable):
                self.clean_up(plan, options)
                raise  # a time-out: asking again would wait as long, past the deadline
            resolved = self._resolve_unanswered(plan, options)
            if isinstance(resolved, Lease):
                return resolved
            if resolved is None or resolved.is_released:
                raise  # we cannot tell whether the lock is free
            lease = None
        if lease is None:
            self.clean_up(plan, options)  # a write of ours that was answered too late is released, not left
            if plan.answered_late:
                # Not "held": nobody held it, DynamoDB was too slow to grant a lease. A caller reading None as
                # a live holder would skip work nobody is doing (a task copy's "skip").
                why = late_answers_message(plan.late_answers)
                raise DynamoDBUnavailable(f"Could not take lock {lock_id[0]!r}: {why}")
        return lease

    def grant(
        self,
        lock_id: LockId,
        version: str,
        fencing_token: int,
        started: float,
        options: AcquireOptions,
        *,
        taken_over: bool = False,
        waiters: tuple[Waiter, ...] = (),
        answer: GrantAnswer | None = None,
    ) -> Lease:
        """The lease a write that started at ``started`` won; the heartbeat renews it unless detached.

        ``answer``: what DynamoDB answered the write, kept for a counted lock's writer (None: unknown).
        """
        clock = self._clock
        record = LeaseRecord(
            clock,
            key=lock_id[0],
            sort_key=lock_id[1],
            owner_name=options.owner_name,
            version=version,
            fencing_token=fencing_token,
            data=options.data,
            lease_duration=options.lease_duration,
            valid_from=started,
            acquired_at=datetime.fromtimestamp(clock.time(), tz=UTC),
            keep_alive=options.keep_alive,
            waiters=waiters,
        )
        record.described = options.described
        record.telemetry = telemetry.lease_granted(options.described, taken_over=taken_over)
        record.grant_answer = answer
        lease = Lease(self._client, record)
        if options.on_lost is not None:
            lease.add_lost_callback(options.on_lost)
        self._observations.forget(lock_id)
        if options.keep_alive:
            self._holdings.add(lease)
            self._heartbeat.start(lease)
        if taken_over:
            # WARNING: a holder stopped without releasing (a crash, a pause, a partition): an operator looks why.
            logger.warning(
                "Took over %s from a holder that stopped renewing (token %d)", printable(lock_id[0]), fencing_token
            )
        elif logger.isEnabledFor(logging.DEBUG):  # as the release's: the call costs a grant more than the check
            logger.debug("Acquired %r (token %d)", lock_id[0], fencing_token)
        return lease

    def plan(
        self, lock_id: LockId, deadline: float | None, *, waiting: bool = False, seat: Seat | None = None
    ) -> Acquisition:
        """The plan of one acquire; ``waiting`` (a wait's, whose turn it is): with the process's seat in the line
        (``seat``, when the wait has it at hand)."""
        if waiting and seat is None:
            seat = self.seats.seat(lock_id)
        return Acquisition(
            lock_id,
            self._observations,
            refresh_period=self._refresh_period,
            deadline=deadline,
            seat=seat,
            timing=self.seats.timing,
        )

    def attempt_while_waiting(self, plan: Acquisition, options: AcquireOptions) -> Lease | None:
        """An attempt of a wait: DynamoDB being unavailable is told to the plan (it backs off), not raised.

        CircuitOpen is raised: DynamoDB did not answer the last calls, so the wait ends at once.
        """
        try:
            return self.attempt(plan, options)
        except CircuitOpen:
            raise
        except DynamoDBUnavailable as unavailable:
            plan.failed(unavailable)
            return None

    def attempt(self, plan: Acquisition, options: AcquireOptions) -> Lease | None:
        """The plan's next step: the lease if it won the lock, None when the plan was told what it found."""
        now = self._clock.monotonic()
        step = plan.next_step(now)
        with deadlines.within(plan.seconds_left(now)):
            if isinstance(step, Write):
                return self._write(plan, step, options)
            if isinstance(step, Join | Refresh):
                line = step.line if isinstance(step, Join) else None
                plan.wrote_line(*self.seats.send(plan.lock_id, plan.seat, line))
                return None
            current = self._store.read(plan.lock_id)
        started = plan.unanswered.landed_in(current, options.owner_name)
        if started is not None:  # a write of ours whose answer was lost landed: the lock is ours since it started
            assert current is not None
            assert current.record_version_number is not None
            assert current.fencing_token is not None  # landed_in checked it
            return self._won(
                plan, current.record_version_number, current.fencing_token, started, options, waiters=current.waiters
            )
        plan.found(current, Instant.read(self._clock))
        return None

    def _write(self, plan: Acquisition, step: Write, options: AcquireOptions) -> Lease | None:
        """One conditional write that takes the lock if it is free, released, expired or ours."""
        stamp = Stamp.new(options.owner_name, options.lease_duration, self._clock)
        try:
            granted = self._store.update(step.request(self._layout, plan.lock_id, stamp, options))
        except Refused as refused:
            current = refused.current
            seen = Instant.read(self._clock)
            if stamp.landed_in(current) and current.fencing_token is not None:
                return self._won(
                    plan, stamp.version, current.fencing_token, stamp.started, options, waiters=current.waiters
                )
            plan.found(current, seen)
            return None
        except DynamoDBError as error:
            if botocore_errors.may_have_landed(error):
                plan.unanswered.add(stamp.version, stamp.started)
            raise
        fencing_token = int(granted[item.FENCING_TOKEN]["N"])
        taken_over, queue = step.may_take_over, parse_waiters(granted.get(WAITERS))
        return self._won(
            plan,
            stamp.version,
            fencing_token,
            stamp.started,
            options,
            taken_over=taken_over,
            waiters=queue,
            # Only a grant answered now knows the item it wrote; grants recovered from lost answers know nothing.
            answer=GrantAnswer(granted, stamp.wall_ms, taken_over),
        )

    def _won(
        self,
        plan: Acquisition,
        version: str,
        fencing_token: int,
        started: float,
        options: AcquireOptions,
        *,
        taken_over: bool = False,
        waiters: tuple[Waiter, ...] = (),
        answer: GrantAnswer | None = None,
    ) -> Lease | None:
        """The lease a write of ours sent at ``started`` won, stored as ``version``; None if it has no time left.

        A lease counts from when its write was sent. One whose answer came after it ran out is not
        granted: its item is told to the plan as an unanswered write's, which the next write accepts.
        """
        if plan.seat is not None:
            plan.seat.taken_out()  # the write that landed took our entry out of the line, granted or not
        if ran_out(started, options.lease_duration, self._clock.monotonic()):
            logger.info(
                "DynamoDB answered a write taking %s after its %gs lease had run out: not granted, trying again",
                printable(plan.lock_id[0]),
                options.lease_duration,
            )
            plan.answered_too_late(version, started)
            return None
        plan.unanswered.clear()  # the item shows ``version``: no other write of ours is stored
        return self.grant(
            plan.lock_id,
            version,
            fencing_token,
            started,
            options,
            taken_over=taken_over,
            waiters=waiters,
            answer=answer,
        )

    def _resolve_unanswered(self, plan: Acquisition, options: AcquireOptions) -> Lease | LockInfo | None:
        """After a failure whose outcome is unknown, read once: if our version is stored, the lock is ours.

        Returns the lease, the item that is there instead, or None when it
        cannot be told (then our possible writes are cleaned up).
        """
        lock_id, unanswered = plan.lock_id, plan.unanswered
        try:
            with deadlines.within(plan.seconds_left(self._clock.monotonic())):
                current = self._store.read(lock_id)
        except DynamoDBError:
            self.clean_up(plan, options)
            return None
        if current is None:
            return None
        started = unanswered.landed_in(current, options.owner_name)
        if started is None:
            return current
        assert current.record_version_number is not None  # landed_in found it among ours
        assert current.fencing_token is not None
        # Count the lease from the start of the write that landed (none, if that is too long ago).
        won = self._won(
            plan, current.record_version_number, current.fencing_token, started, options, waiters=current.waiters
        )
        return current if won is None else won

    def clean_up(self, plan: Acquisition, options: AcquireOptions) -> None:
        """Release what unanswered writes may have left: now if the deadline allows, else in the background."""
        self._unanswered.clean_up(plan, options)

    def abandon(self, lock_id: LockId, unanswered: UnansweredWrites, options: AcquireOptions) -> None:
        """Best effort: release versions we may have written but never heard back about."""
        self._unanswered.abandon(lock_id, unanswered, options)


def _answered_at_once(error: DynamoDBError) -> bool:
    """The failure was not a time-out (a lost connection, a 5xx): one more request may be answered at once."""
    return not (error.original is not None and botocore_errors.timed_out(error.original))
