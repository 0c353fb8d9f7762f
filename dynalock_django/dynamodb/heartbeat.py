"""One background thread per LockClient that renews every lease it holds."""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from .exceptions import DynamoDBUnavailable, LockLost, TableNotFound

if TYPE_CHECKING:
    from .clock import Clock
    from .lease import Lease

logger = logging.getLogger("dynalock_django.heartbeat")

IDLE_WAKE_SECONDS = 60.0


class Heartbeat:
    """Renews each lease every ``period`` seconds, retrying failures within its safe time.

    It never stops for good on an error: a transient failure is retried with
    backoff until the lease's safe time runs out, and only then is the lease
    reported lost. A lease found taken over or released by someone else is
    reported lost at once (by ``renew``).
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
    ) -> None:
        self._leases = leases
        self._renew = renew
        self._expire = expire
        self._period = period
        self._clock = clock
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float | None = None) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.clear()
            try:
                next_wake = self._beat()
            except Exception:
                # Only a bug lands here; the thread must outlive it.
                logger.exception("Heartbeat loop failed; retrying")
                next_wake = self._clock.monotonic() + min(1.0, self._period)
            self._wake.wait(max(0.0, next_wake - self._clock.monotonic()))

    def _beat(self) -> float:
        next_wake = self._clock.monotonic() + IDLE_WAKE_SECONDS
        for lease in list(self._leases()):
            if self._stopping.is_set():
                break
            now = self._clock.monotonic()
            if now >= lease.safe_until:
                self._expire(lease, self._expiry_reason(lease))
                continue
            if now >= lease._next_renewal_at:
                self._renew_once(lease)
            if lease.is_held():
                next_wake = min(next_wake, lease._next_renewal_at, lease.safe_until)
        return next_wake

    def _renew_once(self, lease: Lease) -> None:
        try:
            self._renew(lease)
        except LockLost:
            pass  # already reported by renew
        except TableNotFound as error:
            self._expire(lease, f"the lock table disappeared: {error}")
        except Exception as error:
            lease._renewal_failures += 1
            lease._last_error = error
            delay = min(self._period, 0.05 * 2.0**lease._renewal_failures) * random.uniform(0.5, 1.0)
            lease._next_renewal_at = self._clock.monotonic() + delay
            level = logging.WARNING if isinstance(error, DynamoDBUnavailable) else logging.ERROR
            logger.log(
                level,
                "Renewing %r failed (attempt %d, %.2fs of lease left): %s",
                lease.key,
                lease._renewal_failures,
                lease.remaining(),
                error,
            )

    @staticmethod
    def _expiry_reason(lease: Lease) -> str:
        reason = "its lease ran out without a successful renewal"
        if lease._last_error is not None:
            reason += f" (last error: {lease._last_error})"
        return reason
