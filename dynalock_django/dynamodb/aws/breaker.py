"""A circuit breaker per lock client: while DynamoDB does not answer, calls fail at once instead of waiting.

Closed, it counts calls that got no answer (time-outs, lost connections,
5xx) in a row; an answer, any answer (a refusal, throttling), resets the
count: DynamoDB is there. At ``threshold`` in a row it opens: every call
fails at once with :class:`.CircuitOpen` for ``cool_down`` seconds, without a
request. Then one call goes through as a probe (the others keep failing at
once); its answer closes the breaker, its failure opens it for another
cool-down.

Renewals of held leases are never refused (``always``): a lease must not be
lost because other calls failed. Their outcomes count like any call's, so a
renewal that gets an answer closes the breaker.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from ..exceptions import CircuitOpen
from ..wire.display import printable

if TYPE_CHECKING:
    from ..clock import Clock

# One WARNING line each time the breaker opens or closes: what an operator acts on (docs/operations.md).
logger = logging.getLogger("dynalock_django.breaker")

DEFAULT_THRESHOLD = 3
DEFAULT_COOL_DOWN = 5.0


class CircuitBreaker:
    def __init__(self, clock: Clock, *, threshold: int | None, cool_down: float) -> None:
        self._clock = clock
        self._threshold = threshold  # None: never opens
        self._cool_down = cool_down
        self._mutex = threading.Lock()
        self._failures = 0
        self._open_until: float | None = None  # None: closed
        self._probing = False
        self._last_failure: BaseException | None = None

    def before_call(self, *, always: bool = False) -> bool:
        """Raise CircuitOpen if this call may not be made now; True when it is the probe."""
        if self._open_until is None or always:
            return False  # closed (read without the mutex: a call that starts as it opens started before it)
        with self._mutex:
            if self._open_until is None or always:
                return False
            left = self._open_until - self._clock.monotonic()
            if left <= 0 and not self._probing:
                self._probing = True
                return True
            raise CircuitOpen(
                f"DynamoDB did not answer the last {self._failures} calls: failing at once for "
                f"{max(left, 0.0):.1f}s more (circuit breaker), then one call will probe it. "
                f"The last failure: {self._last_failure}",
                self._last_failure,
                retry_after=max(left, 1.0),  # while a probe runs: about as long as one attempt
            )

    def answered(self, *, probe: bool) -> None:
        """The call got an answer (any answer): DynamoDB is there."""
        if not probe and self._failures == 0 and self._open_until is None:
            return  # nothing to reset (an answer racing a failure may count as the earlier of the two)
        with self._mutex:
            was_open = self._open_until is not None
            self._failures = 0
            self._open_until = None
            if probe:
                self._probing = False
        if was_open:
            logger.warning("DynamoDB answers again: the circuit breaker is closed, calls go through")

    def unanswered(self, error: BaseException, *, probe: bool) -> None:
        """The call got no answer (a time-out, a lost connection, a 5xx): ``error``, botocore's."""
        with self._mutex:
            self._failures += 1
            self._last_failure = error
            if probe:
                self._probing = False
            if self._threshold is None or not (probe or self._failures >= self._threshold):
                return
            opens = self._open_until is None
            self._open_until = self._clock.monotonic() + self._cool_down
            failures = self._failures
        if opens:
            logger.warning(
                "DynamoDB did not answer %d calls in a row: the circuit breaker is open, calls fail at once for "
                "%gs, then one probes (last failure: %s)",
                failures,
                self._cool_down,
                printable(str(error)),
            )

    def finished(self, *, probe: bool) -> None:
        """The call ended without telling (an error of ours): a probe leaves its place to the next call."""
        if probe:
            with self._mutex:
                self._probing = False

    def after_fork_in_child(self) -> None:
        """A forked child starts closed: its parent's mutex may have been held, and its probe is the parent's."""
        self._mutex = threading.Lock()
        self._failures, self._open_until, self._probing = 0, None, False

    @property
    def is_open(self) -> bool:
        """Calls fail at once now (the probe's place may be free)."""
        with self._mutex:
            return self._open_until is not None
