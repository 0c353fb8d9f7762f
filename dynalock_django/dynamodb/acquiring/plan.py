"""The decisions of one acquire, apart from its I/O: what to send next, how long to wait, when to take over.

An :class:`Acquisition` sends nothing and never sleeps. It is told what each
request found and when (monotonic seconds), and answers with the next step
and the delay before it. :mod:`.acquirer` drives it with real requests and
sleeps; the same decisions can drive another kind of wait.

Waiting reads the lock with consistent GetItems (cheaper than refused writes),
backing off by the one rule of every wait (:mod:`.backoff`), waking when the
holder's version will have stood for its lease, or its stamp says it ran out
(:mod:`.observations` holds both rules). It writes
only when the lock looks free, may be taken over, or a write of ours got no
answer.

Writes whose answer was lost stay few: each next write's condition accepts
them (``IN`` their versions), so after :data:`MAX_UNANSWERED` of them in a row
the lock is read instead. Any answer resolves them: a refused write's
condition named them all, so none is stored; a read shows the one that
landed, if any. The others are forgotten; one that lands later still is a
holding nobody renews, which frees like any dead holder's.

A write whose answer came only after the lease it would grant had run out
(:func:`ran_out`; counted from when the write was sent) grants nothing: it
is counted as a write whose answer was lost, since it is stored, and the
next write, sent at once, accepts it and takes the lock with a lease of its own.

A waiting acquire keeps its process's seat in the lock's line (:mod:`.line_seats`):
found held, it joins; a lock released, or a holder that may be taken over, goes
to the line's first live waiter, so arrivals (and try_acquire, which never
joins) wait behind it (:func:`.queue_writes.grant_terms` is the condition). The
head reads often, the others' looks are refreshes of their entries, rarely.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..clock import Jitter, backoff, within_deadline
from ..exceptions import LockTimeout
from ..wire import writes
from ..wire.item import describe_holder
from ..wire.waiters import NO_LINE, Place, place_in_line

if TYPE_CHECKING:
    from ..clock import Instant
    from ..exceptions import DynamoDBError
    from ..options import AcquireOptions
    from ..wire.item import LockInfo
    from ..wire.layout import LockId, TableLayout
    from ..wire.writes import Stamp
    from .line_seats import LineTiming, Seat
    from .observations import Observations

# Versions of one key whose answer was lost that the next write may still accept: past this many, read
# first. It bounds every acquire's condition (and a transaction's size) however many answers are lost.
MAX_UNANSWERED = 4


def ran_out(started: float, lease_duration: float, now: float) -> bool:
    """A lease won by a write sent at ``started`` has no time left at ``now``: it must not be granted."""
    return started + lease_duration <= now


# Unlike the other steps, not frozen: nothing changes a step once made, and every acquire makes a Write,
# whose six fields a frozen dataclass would set through ``object.__setattr__`` (about three times the cost).
@dataclass
class Write:
    """Send the acquire write: it takes the lock if free, released, ours, or (may_take_over) ``observed``."""

    observed: LockInfo | None
    may_take_over: bool
    unanswered: tuple[str, ...]  # versions of ours that may have landed: finding one means the lock is ours
    line: Place = NO_LINE  # the line as last read: the write takes the lock only if it is our turn
    me: str | None = None  # our entry in that line, if we are in it
    # The item at the last read ((None,): no item; None: not read): a permit is taken only as read.
    as_read: tuple[LockInfo | None] | None = field(default=None, compare=False)

    def request(self, layout: TableLayout, lock_id: LockId, stamp: Stamp, options: AcquireOptions) -> dict[str, Any]:
        """The conditional acquire write this step calls for, stamped ``stamp`` (alone or in a transaction)."""
        return writes.acquire(
            layout,
            lock_id,
            stamp,
            data=options.data,
            observed=self.observed,
            may_take_over=self.may_take_over,
            pending=list(self.unanswered),
            permits=options.permits,
            line=self.line,
            me=self.me,
            as_read=self.as_read,
        )


@dataclass(frozen=True)
class Read:
    """Read the lock: it is held and not ours to take yet."""


@dataclass(frozen=True)
class Join:
    """Join the lock's line (one write, which shows the item as a read would): it is held, or others wait first."""

    line: Place  # as last read: a map to add to, or none yet; its stale entries make room


@dataclass(frozen=True)
class Refresh:
    """Keep our entry in line (one write, which shows the item as a read would)."""


Step = Write | Read | Join | Refresh


class UnansweredWrites(dict[str, float]):
    """Versions this acquire wrote whose answer was lost (the keys), with when each write started.

    A dict, not a class around one: every acquire makes one and asks its size and truth, which a
    dict answers without a Python call.
    """

    def add(self, version: str, started: float) -> None:
        self[version] = started

    def keep_only(self, stored_version: str | None) -> None:
        """An answer showed the lock's version: of ours, only that one (if it is ours) may still be stored."""
        kept = {version: started for version, started in self.items() if version == stored_version}
        self.clear()
        self.update(kept)

    def copy(self) -> UnansweredWrites:
        return UnansweredWrites(self)

    def landed_in(self, current: LockInfo | None, owner_name: str) -> float | None:
        """When the write that ``current`` shows started, if it is one of ours (then it is answered)."""
        if current is None or current.owner_name != owner_name or current.fencing_token is None:
            return None
        version = current.record_version_number
        if version is None or version not in self:
            return None
        return self.pop(version)


class Acquisition:
    """One acquire's state: what the lock looked like, what failed, and what of ours may have landed."""

    # What an acquire starts from, kept on the class: an instance sets only what it changes (most
    # acquires win at their first write and change none of it; an instance's every set costs them).
    place = NO_LINE  # where we stood in the line at the last look
    as_read: tuple[LockInfo | None] | None = None  # the item at the last read or refused write; None: none yet
    holder: LockInfo | None = None  # the last holder found in the way
    error: DynamoDBError | None = None  # why the last attempt failed, if it did
    _write_next = True  # False while the last look says: held, and not ours to take yet
    _join_next = False  # the last look says: wait, and we are not in the line
    _refused_joins = 0  # joins refused in a row (a full line): then join again only at the next look
    _joined_in_vain = False  # the last write to the line was written, yet shows us out of it
    _failures_in_a_row = 0  # attempts that failed since the last answer: a seat's look backs off
    _last: Literal["held", "queued", "free", "failed"] | None = None
    _attempts = 0
    _unheld_in_a_row = 0  # attempts since the lock was last found held
    _takeable_in_a_row = 0  # attempts in a row that found a holder we could take over at once
    late_answers = 0  # writes that took the lock but were answered after their lease had run out
    _answered_late = False  # the last attempt's answer came after its lease had run out

    def __init__(
        self,
        lock_id: LockId,
        observations: Observations,
        *,
        refresh_period: float,
        deadline: float | None,
        jitter: Jitter | None = None,
        seat: Seat | None = None,
        timing: LineTiming | None = None,
    ) -> None:
        self.lock_id = lock_id
        self.seat = seat  # this process's seat in the line, for a wait (with its timing); None: never joins
        self.timing = timing
        self.deadline = deadline
        self.unanswered = UnansweredWrites()
        self._observations = observations
        self._refresh_period = refresh_period
        self._jitter = jitter or random.uniform  # looked up now, so a test may fix the jitter

    @property
    def retry_at_once(self) -> bool:
        """The last attempt found the lock free, or held by a holder we may take over now: try again at once.

        Only once in a row, so an item that keeps changing cannot keep us writing without a pause.
        """
        if self._last == "free":
            return self._unheld_in_a_row == 1
        return self._last == "held" and self._takeable_in_a_row == 1

    @property
    def answered_late(self) -> bool:
        """The last attempt took the lock, but its answer came after the lease it would grant had run out."""
        return self._answered_late

    @property
    def found_held(self) -> bool:
        """The last attempt found the lock held (by someone else, or by an item we may not take), or others first."""
        return self._last in ("held", "queued")

    def seconds_left(self, now: float) -> float | None:
        """Until the deadline (negative once passed; None: no deadline)."""
        return None if self.deadline is None else self.deadline - now

    def next_step(self, now: float) -> Step:
        if len(self.unanswered) >= MAX_UNANSWERED:
            return Read()  # resolve what landed before the condition grows any further
        observation = self._observations.get(self.lock_id)
        # The takeover rule; with nothing observed there is no holder to take over. The line's first goes first.
        may_take_over = observation is not None and observation.may_take_over(now) and not self.place.ahead
        waiting = observation is not None or self._last == "queued"
        if not self._write_next and waiting and not may_take_over:
            return Join(self.place) if self._join_next else self._look(now)
        # Held at the last look but not observed (evicted from the cache): the write finds out.
        me = self.seat.waiter_id if self.seat is not None and self.place.joined else None
        observed = observation.info if observation else None
        return Write(observed, may_take_over, tuple(self.unanswered), self.place, me, self.as_read)

    def _look(self, now: float) -> Step:
        """The head and the next read (and refresh their entries now and then); the others' every look is a refresh."""
        seat, timing = self.seat, self.timing
        if seat is None or timing is None or not seat.joined:
            return Read()
        quick = timing.looks_quickly(self.place.ahead)
        return Refresh() if not quick or seat.refresh_due(now, timing) else Read()

    def wrote_line(self, current: LockInfo | None, seen: Instant, written: bool, started: float) -> None:
        """A join or refresh sent at ``started`` was ``written`` (or refused), and showed ``current`` at ``seen``."""
        if written and self.seat is not None:
            self.seat.landed(started)
        self.found(current, seen)
        self._refused_joins = 0 if written else self._refused_joins + 1
        # Written, yet not in line as read (a line we cannot read as others do): joining again at once would
        # only write again; the next join waits for the next look.
        self._joined_in_vain = written and not self.place.joined

    def found(self, current: LockInfo | None, seen: Instant) -> None:
        """A refused write or a read found ``current`` (None: no item) at ``seen``."""
        self._attempts += 1
        self._failures_in_a_row = 0
        self.as_read = (current,)
        self.error = None
        self._answered_late = False
        self._joined_in_vain = False
        me = self.seat.waiter_id if self.seat is not None else None
        self.place = NO_LINE if current is None else place_in_line(current.raw_line, me, seen.wall)
        if self.seat is not None:
            self.seat.saw(self.place)
        stored_version = current.record_version_number if current is not None else None
        self.unanswered.keep_only(stored_version)
        if self.unanswered:  # a write of ours landed: the next write's condition accepts it
            self._write_next, self._last, self._takeable_in_a_row = True, "free", 0
            self._unheld_in_a_row += 1
        elif current is not None and self._observations.saw(self.lock_id, current, seen):
            self.holder, self._write_next, self._last, self._unheld_in_a_row = current, False, "held", 0
            observation = self._observations.get(self.lock_id)
            takeable = observation is not None and observation.may_take_over(seen.monotonic) and not self.place.ahead
            self._takeable_in_a_row = self._takeable_in_a_row + 1 if takeable else 0
        elif self.place.ahead:  # released, but it is the turn of a waiter in line before us
            self.holder, self._write_next, self._last = current, False, "queued"
            self._unheld_in_a_row = self._takeable_in_a_row = 0
        else:
            self._write_next, self._last, self._takeable_in_a_row = True, "free", 0
            self._unheld_in_a_row += 1
        waiting = self._last in ("held", "queued")
        self._join_next = self.seat is not None and not self.seat.unjoinable and waiting and not self.place.joined

    def answered_too_late(self, version: str, started: float) -> None:
        """A write of ours sent at ``started`` stored ``version``, but its answer came after its lease ran out.

        Nothing is granted. The item is ours: the next write, at once, accepts it as an unanswered one's.
        """
        self._attempts += 1
        self.error = None
        self.late_answers += 1
        self._answered_late = True
        self.unanswered.clear()  # the item shows ``version``: no other write of ours is stored
        self.unanswered.add(version, started)
        self._write_next, self._last, self._takeable_in_a_row = True, "free", 0
        self._unheld_in_a_row += 1

    def failed(self, error: DynamoDBError) -> None:
        """An attempt failed (DynamoDB unavailable): wait, then read, unless a write of ours may have landed."""
        self._attempts += 1
        self._failures_in_a_row += 1
        self.error = error
        self._answered_late = False
        self._write_next, self._last, self._takeable_in_a_row = bool(self.unanswered), "failed", 0
        self._unheld_in_a_row += 1

    def held_locally(self, holder: LockInfo | None) -> None:
        """The deadline passed while another thread of this client held the lock."""
        self.holder = holder

    def gave_up(self, timeout: float | None) -> DynamoDBError | LockTimeout:
        """What a wait that ended without the lock raises: the last failure, or who held the lock."""
        if self.error is not None:
            return self.error
        if self._last == "queued" and self.holder is not None and self.holder.is_released:
            return LockTimeout(
                f"Timed out after {timeout:g}s waiting for lock {self.lock_id[0]!r}: it was released, and "
                f"{self.place.ahead} process(es) waiting in its line before us go first.",
                self.holder,
            )
        if self._last == "free" and self.late_answers:
            why = late_answers_message(self.late_answers)
            return LockTimeout(f"Timed out after {timeout:g}s taking lock {self.lock_id[0]!r}: {why}", None)
        return LockTimeout(
            f"Timed out after {timeout:g}s waiting for lock {self.lock_id[0]!r}, {describe_holder(self.holder)}.",
            self.holder,
        )

    def delay(self, now: float) -> float | None:
        """Seconds to wait before the next step; None when the deadline has passed.

        A retry at once waits for nothing, so it is made even at the deadline: ``timeout=0`` then
        takes a lock found free or takeable, as ``try_acquire`` does.
        """
        # After a late answer, not past the deadline: its retry could be as late, a whole request past it.
        late_past_deadline = self._answered_late and self.deadline is not None and now >= self.deadline
        if self.retry_at_once and not late_past_deadline:
            return 0.0
        delay = self._line_delay(now) if self.seat is not None else self._poll_delay(now)
        return within_deadline(delay, self.deadline, now)

    def _line_delay(self, now: float) -> float:
        """A waiter with a seat: join at once; then the head and the next look often (the head in time to take
        over), the others rarely."""
        assert self.timing is not None
        if self.error is not None:  # throttled or unanswered: from the quick period up to the rare one
            return backoff(
                self._failures_in_a_row, first=self.timing.head_look, cap=self.timing.line_look, jitter=self._jitter
            )
        if self._join_next and self._refused_joins < 2 and not self._joined_in_vain:  # one refusal: it changed
            return 0.0
        head = self.place.joined and not self.place.ahead
        quick = self.place.joined and self.timing.looks_quickly(self.place.ahead)
        delay = self.timing.pause(quick=quick, jitter=self._jitter)
        return self._observations.wake_for_takeover(delay, [self.lock_id], now) if head else delay

    def _poll_delay(self, now: float) -> float:
        delay = backoff(self._attempts, cap=self._refresh_period, jitter=self._jitter)
        return self._observations.wake_for_takeover(delay, [self.lock_id], now)


def late_answers_message(count: int) -> str:
    return (
        f"nobody held it, but DynamoDB answered {count} of our writes only after the lease they would grant had "
        "run out. Give the lock a longer lease (lease_duration, or DYNALOCK['LEASE_DURATION']), or find why "
        "DynamoDB answers so slowly (throttling, a loaded endpoint)."
    )
