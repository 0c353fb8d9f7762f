"""Taking one permit of a counted lock: read the set, write one free permit, and say how long to wait if none is.

Each permit is a lock of its own, taken with the single acquire's step
(:meth:`.Acquirer.attempt` and its :class:`.Acquisition`, one per permit):
the same write, fencing token, takeover rule (a version unchanged for the
item's whole lease on our clock) and recovery of writes whose answer was
lost (the next write to that permit accepts them). What this adds is the
choice: one consistent BatchGetItem reads every permit (and the key one
past the last, where a larger set of the same name would show), then the permits
that are free, released, or takeable are tried in turn, starting at a random
index so holders spread. A permit with a write of ours whose answer was
lost goes first: the write to it that follows finds it ours.

A reader of a readers-writer lock has a gate: the writer's item, read in the
same BatchGetItem. While a writer holds it (or a writer that stopped
renewing has not yet been silent for a lease) no permit is written; after a
reader wins a permit it marks the gate (:mod:`..wire.readers_mark`), on the
condition that it is still free as read, and gives the permit back if a
writer came in meanwhile. A writer takes its item first and then reads the
readers when its grant shows the mark (:mod:`.readers_writer`), so
of any reader and writer one of them sees the other (docs/protocol.md,
"Readers and writers").

Request budget of a round: one BatchGetItem, then one write per permit
tried (normally one: a refused write carries the item that refused it); a
reader's round adds one UpdateItem of the gate after a win.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..acquiring.plan import Write, late_answers_message
from ..aws import botocore_errors, deadlines
from ..aws.store import Refused
from ..clock import Instant, Jitter, backoff, within_deadline
from ..exceptions import CircuitOpen, DynamoDBUnavailable, LockTimeout
from ..leases.lease import record_of
from ..wire import permits, writes
from ..wire.item import describe_holder
from ..wire.writes import Stamp

if TYPE_CHECKING:
    from ..acquiring.acquirer import Acquirer
    from ..acquiring.parts import EngineParts
    from ..acquiring.plan import Acquisition
    from ..exceptions import DynamoDBError
    from ..leases.lease import Lease
    from ..options import AcquireOptions
    from ..wire.item import LockInfo
    from ..wire.layout import LockId


def read_set(
    parts: EngineParts, lock_ids: list[LockId], seconds_left: float | None
) -> dict[LockId, LockInfo | None] | DynamoDBUnavailable:
    """One consistent BatchGetItem of a round's items, within its deadline.

    DynamoDB being unavailable is returned (the round notes it, and its wait backs off); CircuitOpen is raised.
    """
    try:
        with deadlines.within(seconds_left):
            return parts.store.read_many(lock_ids)
    except CircuitOpen:
        raise
    except DynamoDBUnavailable as unavailable:
        return unavailable


class PermitRound:
    """One acquire of a permit: what the permits looked like, and each permit's own acquire state."""

    def __init__(
        self,
        parts: EngineParts,
        acquirer: Acquirer,
        *,
        what: str,
        permit_ids: Sequence[LockId],
        options: AcquireOptions,
        deadline: float | None,
        beyond: LockId,
        gate: LockId | None = None,
        name_lock: bool = False,
        jitter: Jitter = random.uniform,
        start: Callable[[int], int] = random.randrange,
    ) -> None:
        assert options.permits == len(permit_ids)
        self.what = what  # for messages: "semaphore 'exports'", "readers of 'report'"
        self.options = options
        self.deadline = deadline
        self.error: DynamoDBError | None = None  # why the last round failed, if it did
        self.blocked_by: LockInfo | None = None  # the writer in the way of a reader, at the last look
        self.holders: list[LockInfo] = []  # the permits' holders at the last look
        self._ids = list(permit_ids)
        self._beyond = beyond  # the key of permit N: an item there belongs to a set of more permits
        self._gate = gate
        # The gate is the plain lock of the set's name (a run of ``@lock_task`` with limit=1), not a writer: held, it
        # is a holding of another count (CountInUse); its mark stays, so a permit marks it only when it lacks ours.
        self._name_lock = name_lock
        # The gate as this round read it when it let the reader in, and whether it was free only by the takeover rule.
        self._gate_read: LockInfo | None = None
        self._gate_expired = False
        self._acquirer = acquirer
        self._parts = parts
        self._jitter = jitter
        self._start = start
        self._plans: dict[LockId, Acquisition] = {lock_id: acquirer.plan(lock_id, deadline) for lock_id in self._ids}
        self._rounds = 0
        self._retry_now = False  # a permit looked free but the write lost it to another holder: look again at once

    def seconds_left(self, now: float) -> float | None:
        return None if self.deadline is None else self.deadline - now

    def attempt(self) -> Lease | None:
        """One round (a read, then a write or a few): the lease of a permit, or None with the reason noted.

        DynamoDB being unavailable is noted (the wait backs off), except CircuitOpen, which is raised.
        """
        self._rounds += 1
        retried, self._retry_now = self._retry_now, False
        lock_ids = [*self._ids, self._beyond, *([self._gate] if self._gate else [])]
        found = read_set(self._parts, lock_ids, self.seconds_left(self._parts.clock.monotonic()))
        self.error = found if isinstance(found, DynamoDBUnavailable) else None
        if isinstance(found, DynamoDBUnavailable):
            return None
        seen = Instant.read(self._parts.clock)
        self._check_counts(found, seen)
        if self._gate is not None and self._gate_closed(found[self._gate], seen):
            if self._name_lock:
                raise permits.count_refused(
                    self.what, "1 (its name's plain lock)", self._gate[0], len(self._ids), holder=self.blocked_by
                )
            return None
        candidates = self._candidates(found, seen)
        for lock_id in candidates:
            lease = self._acquirer.attempt_while_waiting(self._plans[lock_id], self.options)
            if lease is not None:
                return self._won(lease)
            plan = self._plans[lock_id]
            if plan.error is not None:
                self.error = plan.error
                return None  # back off: the next round reads again, and the write that may have landed goes first
        self._retry_now = bool(candidates) and not retried
        return None

    def try_once(self) -> Lease | None:
        """``try_acquire``: one round, and one more write where an answer was lost; DynamoDB's failure is raised.

        As the single ``try_acquire``: after a time-out nothing is asked again (it would wait as
        long); after a failure answered at once, one write to the permit tells whether ours landed.
        """
        lease = self.attempt()
        if lease is None and self.error is None:
            return self._after_late_answers()
        if lease is not None or self.error is None:
            return lease
        error = self.error
        pending = [plan for plan in self._plans.values() if plan.unanswered]
        if not pending or (error.original is not None and botocore_errors.timed_out(error.original)):
            raise error
        for plan in pending:
            lease = self._acquirer.attempt(plan, self.options)  # its condition accepts our lost write
            if lease is not None:
                return self._won(lease)
        return None

    def _after_late_answers(self) -> Lease | None:
        """As the single ``try_acquire``: a permit whose write was answered after its lease ran out is written once
        more at once (its condition accepts our write); answered late again, DynamoDBUnavailable, never None, which
        says every permit is held: nobody held that one, DynamoDB was too slow to grant it."""
        late = [plan for plan in self._plans.values() if plan.answered_late]
        for plan in late:
            lease = self._acquirer.attempt(plan, self.options)
            if lease is not None:
                return self._won(lease)
        if late_answers := sum(plan.late_answers for plan in late if plan.answered_late):
            raise DynamoDBUnavailable(f"Could not take a permit of {self.what}: {late_answers_message(late_answers)}")
        return None

    def _won(self, lease: Lease) -> Lease | None:
        """A permit's lease, told its index (the single lock's grant knows nothing of permits); a reader's, if its
        gate lets it in."""
        record_of(lease).permit = self._ids.index(lease.lock_id)
        return self._checked_at_gate(lease)

    def _check_counts(self, found: dict[LockId, LockInfo | None], seen: Instant) -> None:
        """Refuse a set while one of its items held states another count: ours, or one past our last (a larger set's).

        Only a holding counts: a released item of another count, or one whose holder stopped renewing
        a lease ago (the takeover rule), is taken as any free permit, and its write states our count,
        so a new count takes over once none of the old count is held.
        """
        for lock_id in [*self._ids, self._beyond]:
            current = found[lock_id]
            if current is None or current.is_released:
                continue
            stored = permits.other_count(current, len(self._ids))
            if stored is None:
                continue
            self._parts.observations.saw(lock_id, current, seen)
            observation = self._parts.observations.get(lock_id)
            if observation is not None and observation.may_take_over(seen.monotonic):
                continue  # its holder stopped renewing a lease ago
            raise permits.count_refused(self.what, stored, lock_id[0], len(self._ids), holder=current)

    def _candidates(self, found: dict[LockId, LockInfo | None], seen: Instant) -> list[LockId]:
        """The permits to try now, from a random one on; those with a write of ours that may have landed first."""
        offset = self._start(len(self._ids))
        ordered = self._ids[offset:] + self._ids[:offset]
        now = seen.monotonic
        mine, takeable = [], []
        self.holders = []
        for lock_id in ordered:
            current, plan = found[lock_id], self._plans[lock_id]
            if current is not None and not current.is_released:
                self.holders.append(current)
            if self._parts.holdings.get(lock_id) is not None:
                continue  # another thread of this client holds it: not ours to take
            plan.found(current, seen)
            if plan.unanswered:
                mine.append(lock_id)
            elif isinstance(plan.next_step(now), Write):
                takeable.append(lock_id)
        return mine + takeable

    def _gate_closed(self, gate: LockInfo | None, seen: Instant) -> bool:
        """A writer holds the gate (or claims it): a reader does not write."""
        assert self._gate is not None
        local = self._parts.holdings.get(self._gate)
        if local is not None:
            self.blocked_by = gate
            return True
        self._gate_read, self._gate_expired = gate, False
        if gate is None or not self._parts.observations.saw(self._gate, gate, seen):
            self.blocked_by = None
            return False
        observation = self._parts.observations.get(self._gate)
        if observation is not None and observation.may_take_over(seen.monotonic):
            self.blocked_by, self._gate_expired = None, True
            return False  # its writer stopped renewing a lease ago: it keeps no reader out
        self.blocked_by = gate
        return True

    def _checked_at_gate(self, lease: Lease) -> Lease | None:
        """A reader's permit is kept only if it marked the gate still free as read; else it is given back.

        The mark (readers_mark.py) is what makes a writer read the readers: a permit kept without it
        would be invisible to the next writer. A gate read absent is created released, with the mark.
        """
        if self._gate is None:
            return lease
        if self._parts.holdings.get(self._gate) is not None:  # a writer of this client came in meanwhile
            self.blocked_by = None
            lease.release(best_effort=True)
            return None
        if self._name_lock and not self._gate_expired and self._marked_for_us(self._gate_read):
            return lease  # the name's holder reads the permits and shuts them before it runs (counted/name_lock.py)
        stamp = Stamp.new(self.options.owner_name, self.options.lease_duration, self._parts.clock)
        mark = writes.reader_in(
            self._parts.layout,
            self._gate,
            gate=self._gate_read,
            expired=self._gate_expired,
            stamp=stamp,
            count=len(self._ids),
        )
        try:
            with deadlines.within(self.seconds_left(self._parts.clock.monotonic())):
                self._parts.store.update(mark)
        except Refused as refused:
            if refused.current is None:
                return lease  # deleted since read: the grant that creates it again seeds a token and reads the readers
            self._gate_closed(refused.current, Instant.read(self._parts.clock))
            lease.release(best_effort=True)
            return None
        except DynamoDBUnavailable as unavailable:
            lease.release(best_effort=True)  # the mark may have landed: a writer then reads the readers for nothing
            self.error = unavailable
            return None
        return lease

    def _marked_for_us(self, gate: LockInfo | None) -> bool:
        """The name's item, read free, already says that permits of a set of our count or more may hold."""
        return gate is not None and (gate.marked_count or 0) >= len(self._ids)

    def delay(self, now: float) -> float | None:
        """Seconds to wait before the next round; None when the deadline has passed.

        Backs off by :func:`.backoff.backoff` up to ``refresh_period``, and wakes when a
        holder's version (or the writer's) will have stood for its lease.
        """
        if self._retry_now:
            return 0.0
        delay = backoff(self._rounds, cap=self._parts.refresh_period, jitter=self._jitter)
        delay = self._parts.observations.wake_for_takeover(
            delay, [*self._ids, *([self._gate] if self._gate else [])], now
        )
        return within_deadline(delay, self.deadline, now)

    def gave_up(self, timeout: float | None) -> DynamoDBError | LockTimeout:
        if self.error is not None:
            return self.error
        waited = "Gave up" if timeout is None else f"Timed out after {timeout:g}s"
        if self.blocked_by is not None:
            return LockTimeout(
                f"{waited} waiting to read: a writer holds the lock ({describe_holder(self.blocked_by)}).",
                self.blocked_by,
            )
        holders = "; ".join(describe_holder(holder) for holder in self.holders) or "holders unknown"
        return LockTimeout(
            f"{waited} waiting for the {self.what}: all {self.options.permits} permits held ({holders}).",
            self.holders[0] if self.holders else None,
            holders=self.holders,
        )

    def clean_up(self) -> None:
        """Release what writes whose answer was lost may have left, as a single acquire does."""
        for plan in self._plans.values():
            self._acquirer.clean_up(plan, self.options)

    @property
    def needs_clean_up(self) -> bool:
        return any(plan.unanswered for plan in self._plans.values())
