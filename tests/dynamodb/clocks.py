"""Clocks for tests beside the virtual clock (``VirtualClock``, the ``clock`` and ``virtual_clock`` fixtures):
moving it to a moment, a clock that is wrong, and a lease granted on a clock."""

from __future__ import annotations

import threading
import time
from datetime import datetime

from dynalock_django.dynamodb import Lease, VirtualClock
from dynalock_django.dynamodb.clock import Clock
from dynalock_django.dynamodb.leases.lease_record import LeaseRecord

# A step below any timing rule's resolution, exact in binary floating point: `now + rule - TICK + TICK == now + rule`.
TICK = 2.0**-10


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


def held_lease(clock: Clock, *, lease_duration: float = 20.0, key: str = "k", keep_alive: bool = True) -> Lease:
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


def move_to(clock: VirtualClock, moment: float) -> None:
    """Move ``clock`` forward to ``moment`` (its monotonic time), as a timing rule's test steps through time."""
    clock.advance(moment - clock.monotonic())
