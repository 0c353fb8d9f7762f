"""The two clocks the protocol reads, injectable so tests can skew them.

Decisions (who holds a lock, when a lease may be taken over) use only
``monotonic``; ``time`` (the wall clock) only feeds display timestamps, the
TTL attribute and the fencing-token seed.
"""

from __future__ import annotations

import time
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
