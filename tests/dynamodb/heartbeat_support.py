"""The heartbeat driven by hand on a fake clock: renewals run at once on the test's thread, or wait to be run."""

from __future__ import annotations

from collections.abc import Callable

from dynalock_django.dynamodb import VirtualClock
from dynalock_django.dynamodb.leases.heartbeat import Heartbeat
from dynalock_django.dynamodb.leases.lease import record_of

PERIOD, LEASE = 5.0, 20.0


class Recorder:
    """The heartbeat's renew and expire: renewals succeed (or fail while ``failing``), as DynamoDB would say.

    Each renewal takes ``takes`` seconds of the fake clock, and starts its lease where it started.
    """

    def __init__(self, clock: VirtualClock, takes: float = 0.0) -> None:
        self.clock = clock
        self.takes = takes
        self.failing: Exception | None = None
        self.renewed: list[float] = []
        self.renewed_keys: list[str] = []
        self.expired: list[tuple[float, str]] = []

    def renew(self, lease) -> None:
        started = self.clock.monotonic()
        self.clock.advance(self.takes)
        self.renewed.append(self.clock.monotonic())
        self.renewed_keys.append(lease.key)
        if self.failing is not None:
            raise self.failing
        record_of(lease).renewed(f"v{len(self.renewed)}", started, lease.lease_duration)

    def expire(self, lease, reason: str) -> None:
        self.expired.append((self.clock.monotonic(), reason))
        record_of(lease).mark_lost(reason, superseded=False)


class RightAway:
    """Renewal workers that run each renewal at once, on the thread handing it out: the schedule without threads."""

    def submit(self, urgency: float, job: Callable[[], None]) -> None:
        job()

    def stop(self) -> None:
        pass


class Later:
    """Renewal workers that keep each renewal until the test runs it: a renewal queued, or running."""

    def __init__(self) -> None:
        self.jobs: list[Callable[[], None]] = []

    def submit(self, urgency: float, job: Callable[[], None]) -> None:
        self.jobs.append(job)

    def stop(self) -> None:
        pass


def heartbeat_for(clock, recorder, leases, jitter=lambda low, high: high, *, period=PERIOD, workers=1, run_on=None):
    return Heartbeat(
        leases=lambda: leases,
        renew=recorder.renew,
        expire=recorder.expire,
        period=period,
        clock=clock,
        name="test",
        workers=workers,
        jitter=jitter,
        run_on=run_on or RightAway(),
    )
