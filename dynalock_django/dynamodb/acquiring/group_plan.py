"""The decisions of one ``acquire_many`` apart from its I/O: which keys to read, when to write all, how long to wait.

A :class:`GroupAcquisition` keeps one :class:`.Acquisition` per key, so each
key follows the single acquire's rules: the same polling, the same
clock-free takeover rule (:mod:`.observations`), the same handling of writes
whose answer was lost. What it adds is the group's rule: every key is
written at once, and only when no key is known to be held by someone who may
not be taken over yet; until then only those keys are read.

Keys are in a fixed (sorted) order and written in chunks of
:data:`.writes.MAX_TRANSACTION_ITEMS`, DynamoDB's limit per transaction.

A group is granted only while every lease in it has time left: a chunk
answered after its earliest lease ran out is taken as the single acquire
takes a late answer (:meth:`.Acquisition.answered_too_late`), and a group
whose earlier chunks ran out while later ones were answered is let go and
asked for again.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from ..clock import FIRST_POLL_SECONDS, Jitter, backoff, within_deadline
from ..exceptions import LockTimeout
from ..wire.item import describe_holder
from ..wire.writes import MAX_TRANSACTION_ITEMS
from .plan import Acquisition, Join, Read, Refresh, Write, late_answers_message

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from ..clock import Instant
    from ..exceptions import DynamoDBError
    from ..wire.item import LockInfo
    from ..wire.layout import LockId
    from .line_seats import LineTiming, Seat
    from .observations import Observations


def sorted_lock_ids(lock_ids: Sequence[LockId]) -> list[LockId]:
    """The one order every client takes keys in (what keeps chunked and one-by-one acquires from deadlocking)."""
    return sorted(lock_ids, key=lambda lock_id: (lock_id[0], lock_id[1] or ""))


class GroupAcquisition:
    """One acquire_many's state: a plan per key, and the keys that stood in the way last."""

    def __init__(
        self,
        lock_ids: Sequence[LockId],
        observations: Observations,
        *,
        refresh_period: float,
        deadline: float | None,
        jitter: Jitter = random.uniform,
        seats: Mapping[LockId, Seat] | None = None,
        timing: LineTiming | None = None,
    ) -> None:
        self.lock_ids = sorted_lock_ids(lock_ids)
        self.deadline = deadline
        seats = seats or {}  # a wait's: a seat per key, in the line of each it finds held; a try's: none
        self.plans = {
            lock_id: Acquisition(
                lock_id,
                observations,
                refresh_period=refresh_period,
                deadline=deadline,
                jitter=jitter,
                seat=seats.get(lock_id),
                timing=timing,
            )
            for lock_id in self.lock_ids
        }
        self.chunks = [
            self.lock_ids[start : start + MAX_TRANSACTION_ITEMS]
            for start in range(0, len(self.lock_ids), MAX_TRANSACTION_ITEMS)
        ]
        self.error: DynamoDBError | None = None  # why the last round failed, if it did
        self.late_answers = 0  # rounds that took every key but were answered after a lease had run out
        self._jitter = jitter
        self._in_the_way: list[LockId] = []  # the keys the last round found held, or failed on
        self._local: dict[LockId, LockInfo | None] = {}  # held by another thread of this client at the deadline

    def to_read(self, now: float) -> list[LockId]:
        """The keys to read before writing: held at the last look, and not ours to take yet."""
        return [lock_id for lock_id, plan in self.plans.items() if isinstance(plan.next_step(now), Read)]

    def to_line(self, now: float) -> dict[LockId, Join | Refresh]:
        """The keys whose line to join, or whose entry to refresh, before writing (each one write)."""
        steps = {lock_id: plan.next_step(now) for lock_id, plan in self.plans.items()}
        return {lock_id: step for lock_id, step in steps.items() if isinstance(step, Join | Refresh)}

    def wrote_line(
        self, lock_id: LockId, current: LockInfo | None, seen: Instant, written: bool, started: float
    ) -> None:
        """``lock_id``'s join or refresh, sent at ``started``, was ``written`` (or refused) and showed ``current``."""
        self.plans[lock_id].wrote_line(current, seen, written, started)
        self.attempted(lock_id)

    def taken_out_of_line(self, chunk: Sequence[LockId]) -> None:
        """A transaction of ours landed: its writes took our entries out of the keys' lines, granted or not."""
        for lock_id in chunk:
            seat = self.plans[lock_id].seat
            if seat is not None:
                seat.taken_out()

    def writes(self, chunk: Sequence[LockId], now: float) -> list[Write]:
        """Each key's acquire write (call once :meth:`to_read` is empty): free, ours, or to be taken over."""
        steps = [self.plans[lock_id].next_step(now) for lock_id in chunk]
        assert all(isinstance(step, Write) for step in steps), "a key must be read before it is written"
        return steps  # type: ignore[return-value]

    def new_round(self) -> None:
        self._in_the_way = []

    def found(self, lock_id: LockId, current: LockInfo | None, seen: Instant) -> None:
        """A refusal or a read found ``current`` in ``lock_id`` at ``seen``."""
        self.plans[lock_id].found(current, seen)
        self.attempted(lock_id)

    def attempted(self, lock_id: LockId) -> None:
        """A single acquire's attempt (the fallback without transactions) told ``lock_id``'s plan what it found."""
        self.error = None
        if self.plans[lock_id].found_held:
            self._in_the_way.append(lock_id)

    def answered_too_late(self, lock_id: LockId, version: str, started: float) -> None:
        """``lock_id``'s write, sent at ``started``, stored ``version``, but the chunk's answer came after a lease
        of it ran out: not granted, and written again at once (the write accepts ``version`` as ours)."""
        self.error = None
        self.plans[lock_id].answered_too_late(version, started)
        self._in_the_way.append(lock_id)  # its plan paces the next round: at once, then backing off

    def ran_out_while_taking(self) -> None:
        """Every chunk was taken, but an earlier chunk's lease ran out before the last answer: not granted."""
        self.late_answers += 1

    def failed(self, chunk: Sequence[LockId], error: DynamoDBError) -> None:
        """Writing ``chunk`` failed (DynamoDB unavailable); its keys back off as a single acquire does."""
        self.error = error
        for lock_id in chunk:
            self.plans[lock_id].failed(error)
            self._in_the_way.append(lock_id)

    def held_locally(self, lock_id: LockId, holder: LockInfo | None) -> None:
        """The deadline passed while another thread of this client held ``lock_id``."""
        self._local[lock_id] = holder

    def holders(self) -> dict[LockId, LockInfo | None]:
        """Every key still held at the last look, and by whom (as last read)."""
        held = {lock_id: self.plans[lock_id].holder for lock_id in self._in_the_way if self.plans[lock_id].found_held}
        return {**held, **self._local}

    def gave_up(self, timeout: float | None) -> DynamoDBError | LockTimeout:
        """What a wait that ended without the locks raises: the last failure, or every key still held and by whom."""
        if self.error is not None:
            return self.error
        holders = self.holders()
        named = "; ".join(f"{lock_id[0]!r} {describe_holder(holder)}" for lock_id, holder in holders.items())
        late = self.late_answers + sum(plan.late_answers for plan in self.plans.values())
        if holders:
            why = f"waiting for {len(holders)} of {len(self.lock_ids)} locks: {named}"
        elif late:
            why = f"taking {len(self.lock_ids)} locks: {late_answers_message(late)}"
        else:
            why = f"taking {len(self.lock_ids)} locks: none was held, but the writes kept conflicting with others'"
        return LockTimeout(
            f"Timed out after {timeout:g}s {why}.",
            next(iter(holders.values()), None),
            holders=list(holders.values()),
        )

    def delay(self, now: float) -> float | None:
        """Seconds to wait before the next round; None when the deadline has passed.

        The keys in the way set the pace, each by its own plan (the soonest
        wins); with none (a conflict with another transaction) a short pause.
        """
        delays = [self.plans[lock_id].delay(now) for lock_id in self._in_the_way]
        if not delays:
            # Rounds answered too late back off: the store they wait for is the slow one.
            delay = backoff(self.late_answers, cap=FIRST_POLL_SECONDS * 2**6, jitter=self._jitter)
            return within_deadline(delay, self.deadline, now)
        if any(delay is None for delay in delays):
            return None
        return min(delay for delay in delays if delay is not None)
