"""Clocks for tests: one that moves only when told (timing rules tested without sleeping), one that is wrong."""

from __future__ import annotations

import threading
import time
from datetime import datetime

from dynalock_django.dynamodb import Lease
from dynalock_django.dynamodb.clock import Instant
from dynalock_django.dynamodb.leases.lease_record import LeaseRecord

# A step below any timing rule's resolution, exact in binary floating point: `now + rule - TICK + TICK == now + rule`.
TICK = 2.0**-10


class FakeClock:
    def __init__(self, monotonic: float = 1000.0, wall: float = 1_700_000_000.0) -> None:
        self.now = monotonic
        self._wall_offset = wall - monotonic

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now + self._wall_offset

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        # Real seconds: a unit test drives the time rules by hand, and its threads wait as they always did.
        return event.wait(timeout)

    def instant(self) -> Instant:
        return Instant.read(self)


class OffsetClock:
    """A wall clock that is wrong by ``offset`` seconds; the monotonic clock is the system's."""

    def __init__(self, offset: float) -> None:
        self.offset = offset

    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time() + self.offset

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        return event.wait(timeout)


class NoClient:
    """The client of a lease built by a unit test: the test drives the lease's writes itself."""

    def release(self, lease: Lease, *, best_effort: bool = False) -> bool:
        raise AssertionError("a unit test's lease is never released through its client")

    def extend(self, lease: Lease, lease_duration: float | None = None) -> None:
        raise AssertionError("a unit test's lease is never extended through its client")


def held_lease(clock: FakeClock, *, lease_duration: float = 20.0, key: str = "k", keep_alive: bool = True) -> Lease:
    """A lease granted by a write that started now."""
    record = LeaseRecord(
        clock,
        key=key,
        sort_key=None,
        owner_name="me",
        version="v0",
        fencing_token=1,
        data=None,
        lease_duration=lease_duration,
        valid_from=clock.monotonic(),
        acquired_at=datetime.fromtimestamp(clock.time()),
        keep_alive=keep_alive,
    )
    return Lease(NoClient(), record)
