"""This process's seats in the lines of code waiters: one entry per key in the lock item's ``line``, however many wait.

The threads and coroutines of one client that wait for the same key take
turns (:mod:`.turns`); whichever has the turn looks for all of them, and its
plan (:mod:`.plan`) keeps the process's one :class:`Seat` in the key's line.
The seat outlives the turn: a waiter that gives up hands its turn, and the
place in the line, to the next waiter of the process. The seat lasts while
any waiter of the process waits for the key (:meth:`Seats.arrive`,
:meth:`Seats.depart`, counted under one mutex, so of waiters done together
exactly one is the last). A grant takes the seat out of the line in the same
write; when the last waiter is done, the process forgets the seat, and takes
its entry out of the line if it may be there: joined, or a join sent whose
answer never came (:meth:`Seats.vacate`).

How often a waiter looks (:class:`LineTiming`) follows the client's
``refresh_period``: the head of the line reads often, so a released lock is
taken at once, and so does the next, so it is ready when the head's turn
ends; the others look rarely, each look a refresh of their entry,
which is what keeps them in line: an entry not refreshed for the window
holds nobody's place, so a waiter killed in line is passed over within it
(and one look of the waiter behind it). docs/operations.md states the periods,
and what they cost a minute.
"""

from __future__ import annotations

import functools
import logging
import math
import random
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..aws import botocore_errors, deadlines
from ..aws.store import Refused
from ..clock import Instant, Jitter, start_thread
from ..exceptions import DynamoDBError
from ..wire import queue_writes, waiters

if TYPE_CHECKING:
    from ..aws.store import LockStore
    from ..clock import Clock
    from ..options import Owner
    from ..wire.item import LockInfo
    from ..wire.layout import LockId, TableLayout

logger = logging.getLogger("dynalock_django.acquire")

# What a join or refresh showed: the item after it (or as found, if refused), when, whether written, and sent when.
LineAnswer = tuple["LockInfo | None", Instant, bool, float]

# The looks of the head and of the one after it (so that it is ready when the head's turn ends), at most
# this far apart (or refresh_period, if shorter): what a hand-off waits.
HEAD_LOOK_SECONDS = 0.1
# How many waiters from the front of the line look that often: the head and the next.
QUICK_LOOKERS = 2
# The others' looks, and every waiter's refreshes, are this many refresh periods apart at most, and at most
# a fifth of the window (LOOKS_PER_WINDOW).
LINE_LOOK_PERIODS = 2.0
# An entry stays in line this many refresh periods after its last refresh, at least MIN_WINDOW_SECONDS (a
# loaded machine's late answers do not cost a live waiter its place), and at most waiters.LIVE_SECONDS, the
# longest window a reader grants an entry.
WINDOW_PERIODS = 10.0
MIN_WINDOW_SECONDS = 5.0
# The rarest looker refreshes its entry at least this many times within its window.
LOOKS_PER_WINDOW = 5.0


@dataclass(frozen=True)
class LineTiming:
    """How often waiters in a line look, and how long an entry stays in line without a refresh (seconds)."""

    head_look: float
    line_look: float
    window: float

    @classmethod
    def for_refresh_period(cls, refresh_period: float) -> LineTiming:
        window = min(max(WINDOW_PERIODS * refresh_period, MIN_WINDOW_SECONDS), waiters.LIVE_SECONDS)
        return cls(
            head_look=min(refresh_period, HEAD_LOOK_SECONDS),
            line_look=min(LINE_LOOK_PERIODS * refresh_period, window / LOOKS_PER_WINDOW),
            window=window,
        )

    @staticmethod
    def looks_quickly(ahead: int) -> bool:
        """A waiter with ``ahead`` live waiters before it in line looks often: the head, and the next."""
        return ahead < QUICK_LOOKERS

    def pause(self, *, quick: bool, jitter: Jitter = random.uniform) -> float:
        """The next pause between looks: from half the period to all of it, so waiters do not look in step."""
        return (self.head_look if quick else self.line_look) * jitter(0.5, 1.0)


class Seat:
    """This process's entry in one key's line; only the waiter whose turn it is touches it (and, once the seat
    is forgotten, the last waiter to depart, which takes it out of line)."""

    # Each seat starts with these (class attributes: every acquire makes a seat, and most never join a line).
    joined = False
    sent_join = False  # a join (or the start of a line) was sent, and no answer since showed the line
    unjoinable = False  # DynamoDB refused our entry (no room on the item): wait outside the line
    refreshed_at = -math.inf  # monotonic: when a join or refresh of ours last landed

    def __init__(self, name: str) -> None:
        self.name = name

    @functools.cached_property
    def waiter_id(self) -> str:
        """New for every seat (a leave in the background never takes a later one); made at its first use, as
        most seats never join a line (an uncontended acquire's)."""
        return uuid.uuid4().hex

    @property
    def may_be_in_line(self) -> bool:
        """Our entry may be in the line: joined, or a join sent whose answer was lost (it may have landed)."""
        return self.joined or self.sent_join

    def landed(self, started: float) -> None:
        """A join or refresh sent at ``started`` was written: the entry is in line, seen then."""
        self.joined, self.refreshed_at = True, started

    def saw(self, place: waiters.Place) -> None:
        """A look showed where the entry stands: gone (taken out, or stale) means out of line."""
        self.joined, self.sent_join = place.joined, False

    def taken_out(self) -> None:
        """A write of ours took the lock (granted or not): it took our entry out of the line with it."""
        self.joined = self.sent_join = False

    def refresh_due(self, now: float, timing: LineTiming) -> bool:
        return self.joined and now - self.refreshed_at >= timing.line_look


class Seats:
    """Per key, the seat this process keeps in its line while any of its waiters waits, and the writes that keep it."""

    def __init__(
        self, store: LockStore, layout: TableLayout, clock: Clock, *, owner: Owner, timing: LineTiming
    ) -> None:
        self._store = store
        self._layout = layout
        self._clock = clock
        self._owner = owner
        self.timing = timing
        self._mutex = threading.Lock()
        self._seats: dict[LockId, Seat] = {}
        self._waiters: dict[LockId, int] = {}  # per key, this process's waiters that have not departed

    def arrive(self, lock_id: LockId) -> Seat:
        """A waiter of this process starts waiting for the key: the process keeps the key's seat (returned) until
        it departs."""
        with self._mutex:
            seat = self._seats.get(lock_id)
            if seat is None:
                seat = self._seats[lock_id] = Seat(self._owner.owner_name)
            self._waiters[lock_id] = self._waiters.get(lock_id, 0) + 1
            return seat

    def depart(self, lock_id: LockId) -> Seat | None:
        """A waiter is done, granted or not: if it is the last, the key's seat, forgotten, when its entry may be in
        line (then :meth:`vacate` it; a grant took it out already, and most seats never joined).

        Counted under the mutex that forgets the seat: of waiters done together, exactly one is the last,
        and a waiter arriving after it gets a new seat (a new id, which no leave of the old one takes out).
        """
        with self._mutex:
            self._waiters[lock_id] -= 1
            if self._waiters[lock_id]:
                return None
            del self._waiters[lock_id]
            seat = self._seats.pop(lock_id)
        return seat if seat.may_be_in_line else None

    def own_seats(self, lock_ids: Sequence[LockId]) -> dict[LockId, Seat]:
        """A wait's own seats, one per key, outside the process's shared ones: a group's, which takes no turns.

        Its entries stand in line beside the process's shared one (a group that waited for a turn per key
        could wait for a thread of its own process that holds one key and waits for another's turn).
        """
        return {lock_id: Seat(self._owner.owner_name) for lock_id in lock_ids}

    def vacate_all(self, seats: dict[LockId, Seat], deadline: float | None) -> None:
        """Take a wait's own seats out of line (those that may be there), as :meth:`vacate` does one."""
        for lock_id, seat in seats.items():
            self.vacate(lock_id, seat, deadline)

    def seat(self, lock_id: LockId) -> Seat:
        """The key's seat, while a waiter of this process has arrived and not departed."""
        with self._mutex:
            return self._seats[lock_id]

    def waiting_keys(self) -> frozenset[LockId]:
        """The keys this process keeps a seat for: those some waiter of its still waits for."""
        with self._mutex:
            return frozenset(self._seats)

    def vacate(self, lock_id: LockId, seat: Seat, deadline: float | None) -> None:
        """The last waiter of this process is done: take ``seat``'s entry out of the line, if it may be there.

        Now if the deadline allows, else in the background: a waiter that stays in line after it
        gave up would be waited for by the others until its window ends. A leave that finds no
        entry costs one refused write; a grant took the entry out already, and sends none.
        """
        if not seat.may_be_in_line:
            return
        leave = functools.partial(self._leave, lock_id, seat.waiter_id)
        seconds_left = None if deadline is None else deadline - self._clock.monotonic()
        if seconds_left is None or seconds_left > 0:
            with deadlines.within(seconds_left):
                leave()
        else:
            start_thread(self._clock, leave, "dynalock-leave-line")  # no caller waits for it

    def send(self, lock_id: LockId, seat: Seat | None, line: waiters.Place | None) -> LineAnswer:
        """Join the line as ``line`` was read (starting it, on an item without one; taking out the entries
        found stale), or, with ``line`` None, refresh our entry (refused when it is not there any more)."""
        assert seat is not None  # only a plan with a seat joins or refreshes
        started, wall_ms = self._clock.monotonic(), int(self._clock.time() * 1000)
        if line is not None:
            seat.sent_join = True  # from now on our entry may be in line, whether an answer comes or not
        if line is None:
            request = queue_writes.refresh(
                self._layout, lock_id, seat.waiter_id, wall_ms, waiters.LINE, self.timing.window
            )
        elif line.is_map:
            entry = waiters.entry(seat.name, wall_ms, self.timing.window)
            request = queue_writes.join(self._layout, lock_id, seat.waiter_id, entry, line.stale, waiters.LINE)
        else:
            entry = waiters.entry(seat.name, wall_ms, self.timing.window)
            request = queue_writes.start(self._layout, lock_id, seat.waiter_id, entry, waiters.LINE)
        current: LockInfo | None
        try:
            current, written = self._layout.parse(self._store.update(request)), True
        except Refused as refused:
            current, written = refused.current, False
        except DynamoDBError as error:
            if line is None or not botocore_errors.refused_as_invalid(error):
                raise
            # No room on the item for our entry (a lock whose data comes near DynamoDB's 400 KB item limit; the
            # data budget counts the admin's queue, not this line): this process waits outside the line.
            logger.info("Waiting for %r outside its line, which DynamoDB refused to add to: %s", lock_id[0], error)
            seat.unjoinable = True
            current, written = self._store.read(lock_id), False
        return current, Instant.read(self._clock), written, started

    def _leave(self, lock_id: LockId, waiter_id: str) -> None:
        try:
            self._store.update(queue_writes.leave(self._layout, lock_id, waiter_id, waiters.LINE))
        except Refused:
            pass  # not in line any more (taken out as stale): nothing to take out
        except DynamoDBError as error:
            # Its window ends it: the others pass over an entry nobody refreshes.
            logger.debug("Could not take %r out of the line of %r: %s", waiter_id, lock_id[0], error)
