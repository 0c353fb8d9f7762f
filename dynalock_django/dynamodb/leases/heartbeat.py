"""One background thread per LockClient that renews every lease it holds, and when it does."""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..exceptions import DynamoDBUnavailable, LockLost, TableNotFound
from .lease import record_of

if TYPE_CHECKING:
    from ..clock import Clock
    from .lease import Lease

logger = logging.getLogger("dynalock_django.heartbeat")

IDLE_WAKE_SECONDS = 60.0
FIRST_RETRY_SECONDS = 0.05

Jitter = Callable[[float, float], float]


@dataclass(frozen=True)
class _Failures:
    valid_from: float  # the lease's last successful write when these failures began
    count: int
    retry_at: float
    last_error: BaseException


class RenewalSchedule:
    """When each lease is renewed next: a period after its last successful write, sooner after a failure.

    A failed renewal is retried with exponential backoff (from 50 ms, at most
    a period, with jitter) until one succeeds, whoever's write that is (the
    heartbeat's or a manual ``extend``): the failures are forgotten once the
    lease's last successful write is newer than they are.
    """

    def __init__(self, period: float, jitter: Jitter = random.uniform) -> None:
        self._period = period
        self._jitter = jitter
        self._failures: dict[Lease, _Failures] = {}

    def renewal_at(self, lease: Lease) -> float:
        failures = self._current_failures(lease)
        return failures.retry_at if failures else record_of(lease).valid_from + self._period

    def failed(self, lease: Lease, error: BaseException, now: float) -> int:
        """Record a failed renewal; the number of failures in a row."""
        count = 1 + (failures.count if (failures := self._current_failures(lease)) else 0)
        delay = min(self._period, FIRST_RETRY_SECONDS * 2.0**count) * self._jitter(0.5, 1.0)
        self._failures[lease] = _Failures(record_of(lease).valid_from, count, now + delay, error)
        return count

    def last_error(self, lease: Lease) -> BaseException | None:
        failures = self._current_failures(lease)
        return failures.last_error if failures else None

    def keep_only(self, leases: Iterable[Lease]) -> None:
        """Forget the leases no longer renewed."""
        kept = set(leases)
        self._failures = {lease: f for lease, f in self._failures.items() if lease in kept}

    def _current_failures(self, lease: Lease) -> _Failures | None:
        failures = self._failures.get(lease)
        return failures if failures is not None and failures.valid_from == record_of(lease).valid_from else None


class Heartbeat:
    """Renews each lease on its schedule, retrying failures within its safe time.

    It never stops for good on an error: a transient failure is retried with
    backoff until the lease's safe time runs out, and only then is the lease
    reported lost (``expire``). A lease found taken over or released by
    someone else is reported lost at once (by ``renew``). The thread starts
    with the first lease (:meth:`start`); :meth:`beat` is one pass over them.
    """

    def __init__(
        self,
        *,
        leases: Callable[[], Iterable[Lease]],
        renew: Callable[[Lease], None],
        expire: Callable[[Lease, str], None],
        period: float,
        clock: Clock,
        name: str,
        jitter: Jitter = random.uniform,
    ) -> None:
        self._leases = leases
        self._renew = renew
        self._expire = expire
        self._period = period
        self._clock = clock
        self._name = name
        self._schedule = RenewalSchedule(period, jitter)
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._mutex = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Run the thread (again, if it died), unless stopped; and let it look at the leases now."""
        with self._mutex:
            if not self._stopping.is_set() and not self.is_alive():
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
        self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float | None = None) -> None:
        self._stopping.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def is_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def beat(self) -> float:
        """Renew what is due and expire what ran out; the monotonic time to look again."""
        next_wake = self._clock.monotonic() + IDLE_WAKE_SECONDS
        leases = list(self._leases())
        self._schedule.keep_only(leases)
        for lease in leases:
            if self._stopping.is_set():
                break
            now = self._clock.monotonic()
            if now >= lease.safe_until:
                self._expire(lease, self._expiry_reason(lease))
                continue
            if now >= self._schedule.renewal_at(lease):
                self._renew_once(lease)
            # Not is_held(): a renewal that failed as the safe time ended leaves a lease out of time but
            # not yet reported lost, and its expiry is then due at once, not after an idle wait.
            if lease.state == "held":
                next_wake = min(next_wake, self._schedule.renewal_at(lease), lease.safe_until)
        return next_wake

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.clear()
            try:
                next_wake = self.beat()
            except Exception:
                # Only a bug lands here; the thread must outlive it.
                logger.exception("Heartbeat loop failed; retrying")
                next_wake = self._clock.monotonic() + min(1.0, self._period)
            self._wake.wait(max(0.0, next_wake - self._clock.monotonic()))

    def _renew_once(self, lease: Lease) -> None:
        try:
            self._renew(lease)
        except LockLost:
            pass  # already reported by renew
        except TableNotFound as error:
            self._expire(lease, f"the lock table disappeared: {error}")
        except Exception as error:
            failures = self._schedule.failed(lease, error, self._clock.monotonic())
            level = logging.WARNING if isinstance(error, DynamoDBUnavailable) else logging.ERROR
            logger.log(
                level,
                "Renewing %r failed (attempt %d, %.2fs of lease left): %s",
                lease.key,
                failures,
                lease.remaining(),
                error,
            )

    def _expiry_reason(self, lease: Lease) -> str:
        reason = "its lease ran out without a successful renewal"
        last_error = self._schedule.last_error(lease)
        if last_error is not None:
            reason += f" (last error: {last_error})"
        return reason
