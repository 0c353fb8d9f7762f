"""This process's seats in the lines of code waiters: one entry per key in the lock item's ``line``, however many wait.

The threads and coroutines of one client that wait for the same key take
turns (:mod:`.turns`); whichever has the turn looks for all of them, and its
plan (:mod:`.plan`) keeps the process's one :class:`Seat` in the key's line.
The seat outlives the turn: a waiter that gives up hands its turn, and the
place in the line, to the next waiter of the process. A grant takes the seat
out of the line in the same write; when the last waiter of the process gives
up, the seat leaves the line (:meth:`Seats.vacate`).

How often a waiter looks (:class:`LineTiming`) follows the client's
``refresh_period``: the head of the line reads often, so a released lock is
taken at once, and so does the next, so it is ready when the head's turn
ends; the others look rarely, each look a refresh of their entry,
which is what keeps them in line: an entry not refreshed for the window
holds nobody's place, so a waiter killed in line is passed over within it.
docs/operations.md states the periods, and what they cost a minute.
"""

from __future__ import annotations

import functools
import logging
import random
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..aws import botocore_errors, deadlines
from ..aws.store import Refused
from ..clock import Instant, start_thread
from ..exceptions import DynamoDBError
from ..wire import queue_writes, waiters

if TYPE_CHECKING:
    from ..aws.store import LockStore
    from ..clock import Clock
    from ..wire.item import LockInfo
    from ..wire.layout import LockId, TableLayout

logger = logging.getLogger("dynalock_django.acquire")

Jitter = Callable[[float, float], float]
# What a join or refresh showed: the item after it (or as found, if refused), when, whether written, and sent when.
LineAnswer = tuple["LockInfo | None", Instant, bool, float]

# The looks of the head and of the one after it (so that it is ready when the head's turn ends), at most
# this far apart (or refresh_period, if shorter): what a hand-off waits.
HEAD_LOOK_SECONDS = 0.1
# How many waiters from the front of the line look that often: the head and the next.
QUICK_LOOKERS = 2
# The others' looks, and every waiter's refreshes, are this many refresh periods apart at most.
LINE_LOOK_PERIODS = 2.0
# An entry stays in line this many refresh periods after its last refresh (five looks of the rarest), and
# at least MIN_WINDOW_SECONDS: a loaded machine's late answers do not cost a live waiter its place.
WINDOW_PERIODS = 10.0
MIN_WINDOW_SECONDS = 5.0


@dataclass(frozen=True)
class LineTiming:
    """How often waiters in a line look, and how long an entry stays in line without a refresh (seconds)."""

    head_look: float
    line_look: float
    window: float

    @classmethod
    def for_refresh_period(cls, refresh_period: float) -> LineTiming:
        return cls(
            head_look=min(refresh_period, HEAD_LOOK_SECONDS),
            line_look=LINE_LOOK_PERIODS * refresh_period,
            window=max(WINDOW_PERIODS * refresh_period, MIN_WINDOW_SECONDS),
        )

    @staticmethod
    def looks_quickly(ahead: int) -> bool:
        """A waiter with ``ahead`` live waiters before it in line looks often: the head, and the next."""
        return ahead < QUICK_LOOKERS

    def pause(self, *, quick: bool, jitter: Jitter = random.uniform) -> float:
        """The next pause between looks: from half the period to all of it, so waiters do not look in step."""
        return (self.head_look if quick else self.line_look) * jitter(0.5, 1.0)

    def backoff(self, failures: int, jitter: Jitter = random.uniform) -> float:
        """The pause after ``failures`` looks in a row that failed (throttled, unanswered): doubling from the
        quick period up to the rare one, jittered, so that throttled waiters do not come back in step."""
        return min(self.line_look, self.head_look * 2.0 ** min(failures, 30)) * jitter(0.5, 1.0)


class Seat:
    """This process's entry in one key's line; only the waiter whose turn it is touches it."""

    def __init__(self, name: str) -> None:
        self.waiter_id = uuid.uuid4().hex  # new for every seat: a leave in the background never takes a later one
        self.name = name
        self.joined = False
        self.unjoinable = False  # DynamoDB refused our entry (no room on the item): wait outside the line
        self.refreshed_at = -float("inf")  # monotonic: when a join or refresh of ours last landed

    def landed(self, started: float) -> None:
        """A join or refresh sent at ``started`` was written: the entry is in line, seen then."""
        self.joined, self.refreshed_at = True, started

    def saw(self, place: waiters.Place) -> None:
        """A look showed where the entry stands: gone (taken out, or stale) means out of line."""
        self.joined = place.joined

    def refresh_due(self, now: float, timing: LineTiming) -> bool:
        return self.joined and now - self.refreshed_at >= timing.line_look


class Seats:
    """Per key, the seat this process keeps in its line while any of its waiters waits, and the writes that keep it."""

    def __init__(
        self, store: LockStore, layout: TableLayout, clock: Clock, *, owner_name: Callable[[], str], timing: LineTiming
    ) -> None:
        self._store = store
        self._layout = layout
        self._clock = clock
        self._owner_name = owner_name
        self.timing = timing
        self._mutex = threading.Lock()
        self._seats: dict[LockId, Seat] = {}

    def seat(self, lock_id: LockId) -> Seat:
        with self._mutex:
            seat = self._seats.get(lock_id)
            if seat is None:
                seat = self._seats[lock_id] = Seat(self._owner_name())
            return seat

    def vacate(self, lock_id: LockId, seconds_left: float | None) -> None:
        """The last waiter of this process gave up: forget the key's seat, and take its entry out of the line.

        Now if the deadline allows (``seconds_left``), else in the background: a waiter that stays in
        line after it gave up would be waited for by the others until its window ends.
        """
        with self._mutex:
            seat = self._seats.pop(lock_id, None)
        if seat is None or not seat.joined:
            return
        leave = functools.partial(self._leave, lock_id, seat.waiter_id)
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
