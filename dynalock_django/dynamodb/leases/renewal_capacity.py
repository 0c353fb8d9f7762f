"""How many leases a client's renewal workers keep alive, measured, and the warning when it holds more.

Each renewal's round trip is measured (a moving average). ``workers``
workers renew about ``workers x period / round trip`` leases a period; a
client holding more renews each of them later than a period after its last
write, later and later, until leases are lost. The warning says so when it
starts, with the count, the period and what to change, at most once a
minute (the heartbeat looks many times a second).
"""

from __future__ import annotations

import math
import threading

# Until a renewal has been measured: DynamoDB's round trip within a region, at its slow end.
ASSUMED_ROUND_TRIP_SECONDS = 0.010
# Each new measurement's weight in the moving average.
SMOOTHING = 0.1
# A warning is repeated at most this often while it stays true.
WARNING_INTERVAL_SECONDS = 60.0
# The settings suggested leave this much room over what the measured rate needs.
HEADROOM = 1.5


class RenewalCapacity:
    """The measured round trip of a renewal, and how many leases ``workers`` renew in a ``period``."""

    def __init__(self, *, workers: int, period: float) -> None:
        self.workers = workers
        self.period = period
        self._round_trip: float | None = None
        self._mutex = threading.Lock()

    def measured(self, seconds: float) -> None:
        """One renewal (its request, answered or failed) took ``seconds``."""
        with self._mutex:
            previous = self._round_trip
            self._round_trip = seconds if previous is None else previous + SMOOTHING * (seconds - previous)

    @property
    def is_measured(self) -> bool:
        return self._round_trip is not None

    @property
    def round_trip(self) -> float:
        """Seconds a renewal takes: measured, or assumed until one has been."""
        return ASSUMED_ROUND_TRIP_SECONDS if self._round_trip is None else self._round_trip

    def per_period(self) -> int:
        """How many leases the workers renew in one period at the measured rate."""
        return math.floor(self.workers * self.period / max(self.round_trip, 1e-9))

    def shortfall(self, count: int) -> str | None:
        """Why ``count`` leases cannot all be renewed each period, and what to change; None when they can."""
        per_period = self.per_period()
        if count <= per_period:
            return None
        needed_seconds = HEADROOM * count * self.round_trip
        workers = math.ceil(needed_seconds / self.period)
        period = math.ceil(2 * needed_seconds / self.workers) / 2  # to the half second above
        how = "measured" if self.is_measured else "assumed, none measured yet"
        return (
            f"{count} leases cannot all be renewed every heartbeat period ({self.period:g}s): at "
            f"{self.round_trip * 1000:.1f} ms a renewal ({how}), {self.workers} renewal workers renew about "
            f"{per_period} a period, so leases are renewed late and may be lost. Renew less often (a longer "
            f"heartbeat_period, {period:g}s or more, with lease_duration four times it) or more at once "
            f"(renewal_workers={workers} or more, and botocore's max_pool_connections at least as many)."
        )


class OccasionalWarning:
    """Says a message at most once per ``interval`` seconds of the clock it is given."""

    def __init__(self, interval: float = WARNING_INTERVAL_SECONDS) -> None:
        self._interval = interval
        self._last: float | None = None
        self._mutex = threading.Lock()

    def due(self, now: float) -> bool:
        """True when a warning may be said now (and counts it said)."""
        with self._mutex:
            if self._last is not None and now - self._last < self._interval:
                return False
            self._last = now
            return True
