"""When each lease is renewed, and in which order: the heartbeat's decisions, without threads or I/O.

A lease is due a period after its last successful write (never sooner), or
at its retry time after a failure. The leases due are handed out most urgent
first: the one closest to the end of its safe time. Leases that fall due
together (a group's members, granted by one write) are not all sent at
once: they are paced over a quarter of a period, so a thousand renewals
reach DynamoDB as a stream rather than as a burst each period, and the
stream keeps that spread, since each lease is next due a period after its
own write. Retries are not paced: a failing lease is the most urgent there is.
The heartbeat asks at a monotonic time ``now`` and does what it is told;
the tests ask on a fake clock.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..clock import Jitter, backoff
from .lease import record_of

if TYPE_CHECKING:
    from .lease import Lease

IDLE_WAKE_SECONDS = 60.0
FIRST_RETRY_SECONDS = 0.05
# The share of a period over which renewals falling due together are spread: with the
# lease longer than two periods, the last of them still has more than 3/4 of a period
# left for retries.
SPREAD_SHARE = 0.25


@dataclass(frozen=True)
class _Failures:
    valid_from: float  # the lease's last successful write when these failures began
    count: int
    retry_at: float
    last_error: BaseException


@dataclass(frozen=True)
class Renewal:
    """A renewal to start now; ``due`` is when it fell due (how late it starts is the heartbeat's lag)."""

    lease: Lease
    due: float


@dataclass(frozen=True)
class Plan:
    """What to do now: report these leases lost (out of time), and start these renewals, most urgent first."""

    expire: list[Lease]
    renew: list[Renewal]


def urgency(lease: Lease) -> float:
    """Smaller is more urgent: the end of the lease's safe time."""
    return record_of(lease).safe_until


class RenewalSchedule:
    """When each lease is renewed next, and which of the leases due go first.

    A failed renewal is retried with exponential backoff (from 50 ms, at most
    a period, with jitter) until one succeeds, whoever's write that is (the
    heartbeat's or a manual ``extend``): the failures are forgotten once the
    lease's last successful write is newer than they are.

    ``burst``: the longest the heartbeat may go between two looks; the pace
    lets through at once what fell due over that time.
    """

    def __init__(self, period: float, jitter: Jitter = random.uniform, *, burst: float = 0.0) -> None:
        self._period = period
        self._jitter = jitter
        self._burst = burst
        self._failures: dict[Lease, _Failures] = {}
        # The pace: no regular renewal starts before this monotonic time.
        self._paced_until = float("-inf")

    def renewal_at(self, lease: Lease) -> float:
        failures = self._current_failures(lease)
        return failures.retry_at if failures else record_of(lease).valid_from + self._period

    def plan(
        self, leases: Collection[Lease], now: float, *, busy: Collection[Lease], running: Collection[Lease]
    ) -> Plan:
        """What to do at ``now``: ``busy`` leases have a renewal queued or running (``running``: started).

        A lease whose renewal is running is left alone: its answer decides
        (the worker wakes the heartbeat when it failed). One only queued may
        run out of safe time before a worker takes it: it is reported lost.
        """
        self.keep_only(leases)
        expire, ready = [], []
        for lease in leases:
            if lease in running:
                continue
            if now >= lease.safe_until:
                expire.append(lease)
            elif lease not in busy and now >= self.renewal_at(lease):
                ready.append(lease)
        ready.sort(key=urgency)
        gap = self._period * SPREAD_SHARE / max(1, len(leases))
        renew = []
        for lease in ready:
            due = self.renewal_at(lease)
            if self._current_failures(lease) is None:
                if now < self._paced_until:
                    continue
                self._paced_until = max(self._paced_until, now - self._burst) + gap
            renew.append(Renewal(lease, due))
        return Plan(expire, renew)

    def next_look(
        self, leases: Iterable[Lease], now: float, *, busy: Mapping[Lease, float], running: Collection[Lease]
    ) -> float:
        """The monotonic time something may next be due: a renewal (not before the pace allows), or an expiry.

        ``busy`` maps each lease with a renewal queued or running to when it was handed out: its next
        renewal is due no sooner than a period after that, unless it fails (the worker then wakes the
        heartbeat).
        """
        look = now + IDLE_WAKE_SECONDS
        for lease in leases:
            # Not is_held(): a renewal that failed as the safe time ended leaves a lease out of time but
            # not yet reported lost, and its expiry is then due at once, not after an idle wait.
            if lease.state != "held":
                continue
            handed_out = busy.get(lease)
            if handed_out is not None:
                look = min(look, handed_out + self._period)
                if lease in running:
                    continue
            look = min(look, lease.safe_until)
            if handed_out is None:
                failing = self._current_failures(lease) is not None
                look = min(look, self.renewal_at(lease) if failing else max(self.renewal_at(lease), self._paced_until))
        return look

    def failed(self, lease: Lease, error: BaseException, now: float) -> int:
        """Record a failed renewal; the number of failures in a row."""
        count = 1 + (failures.count if (failures := self._current_failures(lease)) else 0)
        delay = backoff(count, cap=self._period, jitter=self._jitter, first=FIRST_RETRY_SECONDS)
        self._failures[lease] = _Failures(record_of(lease).valid_from, count, now + delay, error)
        return count

    def last_error(self, lease: Lease) -> BaseException | None:
        failures = self._current_failures(lease)
        return failures.last_error if failures else None

    def keep_only(self, leases: Iterable[Lease]) -> None:
        """Forget the leases no longer renewed."""
        if not self._failures:
            return
        kept = set(leases)
        self._failures = {lease: f for lease, f in self._failures.items() if lease in kept}

    def _current_failures(self, lease: Lease) -> _Failures | None:
        failures = self._failures.get(lease)
        return failures if failures is not None and failures.valid_from == record_of(lease).valid_from else None
