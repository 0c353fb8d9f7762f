"""The clocks the protocol reads and waits on, injectable so tests can skew them or move them by hand.

Decisions (who holds a lock, when a lease may be taken over) use
``monotonic``; ``time`` (the wall clock) feeds display timestamps, the TTL
attribute and the fencing-token seed, and is compared with another client's
wall clock only by the opt-in clock-bound takeover rule (``max_clock_skew``,
:mod:`.observations`). Every wait of the protocol's threads goes through
``wait``, so a clock that does not follow real time (:class:`VirtualClock`)
also decides when those threads wake. How long a waiter pauses between tries
is one rule too, :func:`backoff`, for every wait and the heartbeat's retries.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

# How soon a thread waiting on the virtual clock sees an event another thread set (real seconds).
POLL_SECONDS = 0.002
# How long (real seconds) the virtual clock waits for a thread that left a wait to wait again or end.
SETTLE_PATIENCE_SECONDS = 60.0


class Clock(Protocol):
    """What a ``LockClient`` reads time from: ``SystemClock`` in production, ``VirtualClock`` in tests."""

    def monotonic(self) -> float: ...

    def time(self) -> float: ...

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        """Block until ``event`` is set (True) or ``timeout`` seconds of this clock have passed (False)."""
        ...


class SystemClock:
    """The machine's clocks: ``time.monotonic`` for waits and leases, ``time.time`` for wall-clock stamps."""

    # The functions themselves, not methods calling them: an uncontended acquire and release reads the
    # clocks eight times, and a method would add a Python frame to each read.
    monotonic = staticmethod(time.monotonic)
    time = staticmethod(time.time)

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        return event.wait(timeout)


SYSTEM_CLOCK = SystemClock()


def start_thread(clock: Clock, target: Callable[[], object], name: str) -> threading.Thread:
    """Start a daemon thread of the protocol's; a virtual clock counts it as running until it first waits."""
    thread = threading.Thread(target=target, name=name, daemon=True)
    if isinstance(clock, VirtualClock):
        clock.follow(thread)
    thread.start()
    return thread


async def pause(clock: Clock, seconds: float) -> None:
    """A coroutine's wait of ``seconds`` of ``clock``: on its event loop in real time; on a virtual clock, by moving it.

    A virtual clock moves by each pausing coroutine's seconds in turn (two coroutines pausing one
    second each move it two): time only goes forward, and every wait ends.
    """
    if isinstance(clock, VirtualClock):
        await asyncio.sleep(0)  # the loop's other coroutines run first
        clock.advance(seconds)
    else:
        await asyncio.sleep(seconds)


@dataclass(frozen=True)
class Instant:
    """One moment on both clocks, as a waiter sees a holder's item."""

    wall: float
    monotonic: float

    @classmethod
    def read(cls, clock: Clock) -> Instant:
        # The wall clock first: the monotonic time that dates the wall reading is
        # then a little late, so a deadline derived from both comes late, never early.
        wall = clock.time()
        return cls(wall, clock.monotonic())


@dataclass(frozen=True)
class _Wait:
    deadline: float
    event: threading.Event


class ThreadsDidNotSettle(RuntimeError):
    """A thread that waits on a :class:`VirtualClock` neither waited again nor ended in time."""


class VirtualClock:
    """Time that moves only when a test moves it: timing rules tested in milliseconds of real time.

    :meth:`advance` moves it forward, stopping at every wait that falls due on
    the way until the thread that waited is waiting again (or has ended): a
    heartbeat renews as often in a virtual minute as in a real one, and in the
    same order. A wait of the thread that made the clock (the test's thread)
    moves it too, to the next moment something is due, once every other thread
    that waits on it is waiting: ``acquire(timeout=30)`` on a held lock takes no
    real time. Threads of the test's own wait for the test's thread to move it.
    """

    def __init__(self, monotonic: float = 1000.0, wall: float = 1_700_000_000.0) -> None:
        self._now = monotonic
        self._wall_offset = wall - monotonic
        self._changed = threading.Condition()
        self._waits: dict[threading.Thread, _Wait] = {}  # the threads waiting now
        self._known: weakref.WeakSet[threading.Thread] = weakref.WeakSet()  # every thread that ever waited
        self._driver = threading.current_thread()

    def follow(self, thread: threading.Thread) -> None:
        """Count ``thread`` (about to start) as running until it first waits: time waits for it from the start."""
        with self._changed:
            self._known.add(thread)

    def monotonic(self) -> float:
        with self._changed:
            return self._now

    def time(self) -> float:
        return self.monotonic() + self._wall_offset

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        me = threading.current_thread()
        with self._changed:
            deadline = math.inf if timeout is None else self._now + max(0.0, timeout)
            self._known.add(me)
            self._waits[me] = _Wait(deadline, event)
            try:
                while not event.is_set() and self._now < deadline:
                    due = min(deadline, self._next_due(me))
                    if me is self._driver and due < math.inf and self._settled(me):
                        self._move_to(due)
                    else:
                        self._changed.wait(POLL_SECONDS)
                if me is self._driver and not event.is_set():
                    self._settle(me)  # who else was due at this moment runs before the test goes on
                return event.is_set()
            finally:
                del self._waits[me]
                self._changed.notify_all()

    def advance(self, seconds: float) -> None:
        """Move time ``seconds`` forward, letting every thread whose wait falls due on the way run first."""
        if not seconds >= 0:
            raise ValueError(f"A clock only moves forward: advance by 0 seconds or more, not {seconds!r}.")
        me = threading.current_thread()
        with self._changed:
            target = self._now + seconds
            while True:
                self._settle(me)
                due = self._next_due(me)
                if due > target:
                    break
                self._move_to(due)
            self._move_to(target)
            self._settle(me)

    def jump(self, seconds: float) -> None:
        """Move time forward at once, without waiting for anyone: what a request that hung for ``seconds`` costs."""
        with self._changed:
            self._move_to(self._now + max(0.0, seconds))

    def _move_to(self, moment: float) -> None:
        if moment > self._now:
            self._now = moment
        self._changed.notify_all()

    def _next_due(self, me: threading.Thread) -> float:
        return min((wait.deadline for thread, wait in self._waits.items() if thread is not me), default=math.inf)

    def _settled(self, me: threading.Thread) -> bool:
        """Every other thread that waits on this clock is waiting, for something not yet due."""
        for thread in list(self._known):
            if thread is me or not thread.is_alive():
                continue
            wait = self._waits.get(thread)
            if wait is None or wait.event.is_set() or wait.deadline <= self._now:
                return False
        return True

    def _settle(self, me: threading.Thread) -> None:
        patience = time.monotonic() + SETTLE_PATIENCE_SECONDS
        while not self._settled(me):
            if time.monotonic() > patience:
                running = sorted(t.name for t in self._known if t.is_alive() and t is not me and t not in self._waits)
                raise ThreadsDidNotSettle(
                    f"These threads left a wait on the virtual clock {SETTLE_PATIENCE_SECONDS:.0f} s ago and "
                    f"neither waited again nor ended: {', '.join(running) or '(none: an event stays set)'}. "
                    "A thread that waits on something other than the clock (a join, a queue) holds time still."
                )
            self._changed.wait(POLL_SECONDS)


# The back-off rule of every wait (a single lock's, a group's, a permit's, a writer's drain) and of the
# heartbeat's retries after a failed renewal. A waiter pauses a little longer each time, doubling from
# FIRST_POLL_SECONDS (most locks are held briefly) up to a cap (the ``refresh_period``), jittered to from
# 50 to 100 % so that waiters do not come back in step; it never pauses past its deadline.
FIRST_POLL_SECONDS = 0.02

Jitter = Callable[[float, float], float]


def backoff(tries: int, *, cap: float, jitter: Jitter, first: float = FIRST_POLL_SECONDS) -> float:
    """The pause after ``tries`` looks: ``first`` doubled each time up to ``cap``, jittered.

    The exponent stops at 30 (far past any cap): a heartbeat failing thousands of renewals in a row of an
    hours-long lease would otherwise overflow the float.
    """
    return min(cap, first * 2.0 ** min(tries, 30)) * jitter(0.5, 1.0)


def within_deadline(delay: float, deadline: float | None, now: float) -> float | None:
    """``delay``, never past ``deadline``; None when the deadline has passed."""
    if deadline is None:
        return delay
    left = deadline - now
    return min(delay, left) if left > 0 else None
