"""The two clocks the protocol reads, injectable so tests can skew them.

Decisions (who holds a lock, when a lease may be taken over) use
``monotonic``; ``time`` (the wall clock) feeds display timestamps, the TTL
attribute and the fencing-token seed, and is compared with another client's
wall clock only by the opt-in clock-bound takeover rule (``max_clock_skew``,
:mod:`.observations`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def time(self) -> float: ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()


SYSTEM_CLOCK = SystemClock()


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
