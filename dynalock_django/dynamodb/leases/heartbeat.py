"""The heartbeat of a LockClient: one thread deciding which leases to renew, a few workers renewing them.

The thread looks at every lease on its schedule (:mod:`.renewal_schedule`),
reports lost those out of safe time, and hands those due to the renewal
workers (:mod:`.renewal_workers`), most urgent first. A lease has at most one
renewal queued or running at a time, and every write to it is serialized by
its record's ``write_lock`` (in :mod:`.lease_writes`), so a worker's renewal,
a manual ``extend`` and a release never interleave. Each renewal is measured
(:mod:`.renewal_capacity`): when the client holds more leases than its
workers renew in a period, it says so before any is lost.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol

from ..clock import Jitter, start_thread
from ..exceptions import DynamoDBUnavailable, LockLost, TableNotFound
from .lease import record_of
from .lease_record import RAN_OUT
from .renewal_capacity import OccasionalWarning, RenewalCapacity
from .renewal_schedule import IDLE_WAKE_SECONDS, Plan, Renewal, RenewalSchedule, urgency
from .renewal_workers import RenewalWorkers

if TYPE_CHECKING:
    from ..clock import Clock
    from .lease import Lease

__all__ = ["DEFAULT_RENEWAL_WORKERS", "IDLE_WAKE_SECONDS", "Heartbeat"]

logger = logging.getLogger("dynalock_django.heartbeat")

# As many requests in flight as botocore's default connection pool (10) leaves room for beside a
# few other calls: at 10 ms a round trip, 800 renewals a second, 4,000 leases at a 5 s heartbeat.
DEFAULT_RENEWAL_WORKERS = 8
# The thread looks at most this many times a period: each look reads every lease, and with leases
# due all through the period, it would otherwise look once per renewal. A renewal may start up to
# this late (1/50 of a period: 0.1 s at the default 5 s).
LOOKS_PER_PERIOD = 50

LagListener = Callable[[float], None]


class Workers(Protocol):
    """Where renewals run (:class:`.RenewalWorkers`; a test's runs each at once, on the calling thread)."""

    def submit(self, urgency: float, job: Callable[[], None]) -> None: ...

    def stop(self) -> None: ...


class Heartbeat:
    """Renews each lease on its schedule, retrying failures within its safe time.

    It never stops for good on an error: a transient failure is retried with
    backoff until the lease's safe time runs out, and only then is the lease
    reported lost (``expire``). A lease found taken over or released by
    someone else is reported lost at once (by ``renew``). The thread starts
    with the first lease (:meth:`start`); :meth:`beat` is one look at them.

    ``lag`` is how late (seconds) the most overdue renewal of the last period
    started after it fell due; :meth:`add_lag_listener` hears every renewal's.
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
        workers: int = DEFAULT_RENEWAL_WORKERS,
        jitter: Jitter = random.uniform,
        run_on: Workers | None = None,
    ) -> None:
        self._leases = leases
        self._renew = renew
        self._expire = expire
        self._period = period
        self._clock = clock
        self._name = name
        self._look_interval = period / LOOKS_PER_PERIOD
        self._schedule = RenewalSchedule(period, jitter, burst=self._look_interval)
        self._schedule_lock = threading.Lock()  # the thread plans while workers record failures
        self.capacity = RenewalCapacity(workers=workers, period=period)
        self._behind = OccasionalWarning()
        self._too_many_asked = OccasionalWarning()
        self._workers: Workers = run_on or RenewalWorkers(workers, f"{name}-renewal", clock)
        self._busy: dict[Lease, float] = {}  # a renewal queued or running: when it was handed out
        self._running: set[Lease] = set()
        self._lag = (0.0, 0.0, float("-inf"))  # the last period's worst, this one's, when this one began
        self._lag_listeners: list[LagListener] = []
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._mutex = threading.Lock()
        self._thread: threading.Thread | None = None
        self._asleep_until: float | None = None  # the thread waits for its next look until then (None: not now)

    def start(self, lease: Lease | None = None) -> None:
        """Run the thread (again, if it died), unless stopped; and let it look at the leases now.

        With ``lease`` (just granted, and held already): only if the thread would look later than
        the lease needs its first look, its renewal or its end. A client taking locks in turn would
        otherwise wake the thread for each, to learn that nothing is due.
        """
        with self._mutex:
            # A thread forgets itself as it ends (_run): a live one (the usual case) is asked nothing, as every
            # grant asks.
            if self._thread is None and not self._stopping.is_set():
                self._thread = start_thread(self._clock, self._run, self._name)
            asleep_until = self._asleep_until
        if asleep_until is None or lease is None:
            self._wake.set()
            return
        record = record_of(lease)
        # The first of its safe time's end and its first renewal (both from valid_from: one addition, no property).
        if record.valid_from + min(record.lease_duration, self._period) < asleep_until:
            self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float | None = None) -> None:
        """Stop the thread and the workers: renewals queued are dropped, those running end with their request."""
        self._stopping.set()
        self._wake.set()
        self._workers.stop()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def is_alive(self) -> bool:
        thread = self._thread  # read once: an ending thread sets it to None
        return thread is not None and thread.is_alive()

    @property
    def lag(self) -> float:
        """Seconds the most overdue renewal started in the last heartbeat period was late (0: none was)."""
        with self._mutex:
            previous, current, _ = self._lag_at(self._clock.monotonic())
        return max(previous, current)

    def add_lag_listener(self, listener: LagListener) -> None:
        """Call ``listener(seconds)`` with how late each renewal starts, on the worker that starts it."""
        self._lag_listeners.append(listener)

    def warn_if_too_many(self, more: int) -> None:
        """Warn when ``more`` leases besides those held are more than the workers can keep renewed."""
        held = len(list(self._leases()))
        problem = self.capacity.shortfall(held + more)
        if problem and self._too_many_asked.due(self._clock.monotonic()):
            logger.warning("Asked for %d locks while holding %d: %s", more, held, problem)

    def beat(self) -> float:
        """Report lost what ran out, hand out what is due; the monotonic time to look again."""
        leases = list(self._leases())
        plan = self._plan(leases)
        for lease in plan.expire:
            self._expire(lease, self._expiry_reason(lease))
        for renewal in plan.renew:
            self._hand_out(renewal)
        self._warn_if_behind(len(leases))
        with self._mutex:
            busy, running = dict(self._busy), set(self._running)
        with self._schedule_lock:
            return self._schedule.next_look(leases, self._clock.monotonic(), busy=busy, running=running)

    def _plan(self, leases: list[Lease]) -> Plan:
        now = self._clock.monotonic()
        with self._mutex:
            busy, running = set(self._busy), set(self._running)
        with self._schedule_lock:
            return self._schedule.plan(leases, now, busy=busy, running=running)

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                self._wake.clear()
                looked = self._clock.monotonic()
                try:
                    next_wake = self.beat()
                except Exception:
                    # Only a bug lands here; the thread must outlive it.
                    logger.exception("Heartbeat loop failed; retrying")
                    next_wake = self._clock.monotonic() + min(1.0, self._period)
                # Said under the mutex: a lease granted after this look and due before ``next_wake`` wakes the thread
                # (which, woken or not, looks again no sooner than the look interval allows).
                with self._mutex:
                    self._asleep_until = next_wake
                # Not again before the look interval has passed: what falls due meanwhile goes out together.
                if self._clock.wait(self._stopping, max(0.0, looked + self._look_interval - self._clock.monotonic())):
                    return
                self._clock.wait(self._wake, max(0.0, next_wake - self._clock.monotonic()))
                with self._mutex:
                    self._asleep_until = None
        finally:
            with self._mutex:
                if self._thread is threading.current_thread():  # only ever itself: one runs at a time, but say so
                    self._thread = None  # the next start runs another (after a stop, or a bug this one died of)

    def _hand_out(self, renewal: Renewal) -> None:
        with self._mutex:
            self._busy[renewal.lease] = self._clock.monotonic()
        self._workers.submit(urgency(renewal.lease), lambda: self._renew_on_worker(renewal))

    def _renew_on_worker(self, renewal: Renewal) -> None:
        lease = renewal.lease
        if lease.state != "held":  # reported lost (or released) while its renewal was queued: nothing to send
            with self._mutex:
                self._busy.pop(lease, None)
            return
        with self._mutex:
            self._running.add(lease)
        started = self._clock.monotonic()
        self._started_late(started - renewal.due, started)
        failed = False
        try:
            self._renew_once(lease)
            self.capacity.measured(self._clock.monotonic() - started)
        except _Failed:
            self.capacity.measured(self._clock.monotonic() - started)
            failed = True
        finally:
            with self._mutex:
                self._running.discard(lease)
                self._busy.pop(lease, None)
        if failed:
            self._wake.set()  # its retry is due sooner than the thread's next look

    def _renew_once(self, lease: Lease) -> None:
        try:
            self._renew(lease)
        except LockLost:
            pass  # already reported by renew (or not held any more: the thread reports it)
        except TableNotFound as error:
            self._expire(lease, f"the lock table disappeared: {error}")
        except Exception as error:
            with self._schedule_lock:
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
            raise _Failed from error

    def _started_late(self, lateness: float, now: float) -> None:
        lateness = max(0.0, lateness)
        with self._mutex:
            previous, current, since = self._lag_at(now)
            self._lag = (previous, max(current, lateness), since)
        for listener in list(self._lag_listeners):
            try:
                listener(lateness)
            except Exception:
                logger.exception("Heartbeat lag listener %r raised", listener)

    def _lag_at(self, now: float) -> tuple[float, float, float]:
        """The lag's two periods as at ``now``: the one that began at ``since`` becomes the last once a period old."""
        previous, current, since = self._lag
        if now - since < self._period:
            return previous, current, since
        return (current if now - since < 2 * self._period else 0.0), 0.0, now

    def _warn_if_behind(self, held: int) -> None:
        if not self.capacity.is_measured:
            return  # an assumed round trip is no reason to warn a running client
        problem = self.capacity.shortfall(held)
        if problem and self._behind.due(self._clock.monotonic()):
            logger.warning("This client's heartbeat cannot keep up: %s", problem)

    def _expiry_reason(self, lease: Lease) -> str:
        reason = RAN_OUT
        with self._schedule_lock:
            last_error = self._schedule.last_error(lease)
        if last_error is not None:
            reason += f" (last error: {last_error})"
        return reason


class _Failed(Exception):
    """A renewal failed and will be retried (logged already)."""
