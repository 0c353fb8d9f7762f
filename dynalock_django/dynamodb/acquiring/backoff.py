"""The back-off rule of every wait (a single lock's, a group's, a permit's, a writer's drain): one place.

Between looks a waiter pauses a little longer each time, doubling from
:data:`FIRST_POLL_SECONDS` (most locks are held briefly) up to a cap (the
``refresh_period``), jittered to from 50 to 100 % so that waiters do not come back in
step; it wakes early when a holder it saw may be taken over, and never
pauses past its deadline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..wire.layout import LockId
    from .observations import Observations

FIRST_POLL_SECONDS = 0.02

Jitter = Callable[[float, float], float]


def backoff(tries: int, *, cap: float, jitter: Jitter, first: float = FIRST_POLL_SECONDS) -> float:
    """The pause after ``tries`` looks: ``first`` doubled each time up to ``cap``, jittered."""
    return min(cap, first * 2.0 ** min(tries, 30)) * jitter(0.5, 1.0)


def until_takeover(delay: float, observations: Observations, lock_ids: Iterable[LockId], now: float) -> float:
    """``delay``, cut to wake just after a holder seen on one of ``lock_ids`` may be taken over, not a look later."""
    for lock_id in lock_ids:
        observation = observations.get(lock_id)
        if observation is not None and observation.takeover_at >= now:
            delay = min(delay, observation.takeover_at - now + 0.001)
    return delay


def within_deadline(delay: float, deadline: float | None, now: float) -> float | None:
    """``delay``, never past ``deadline``; None when the deadline has passed."""
    if deadline is None:
        return delay
    left = deadline - now
    return min(delay, left) if left > 0 else None
