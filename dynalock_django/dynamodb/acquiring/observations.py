"""What this client has seen of other holders' locks, and the rule for taking one over.

The clock-free rule: a lock may be taken over once the same record version
number has stood for that item's whole lease duration on *our* monotonic
clock. A holder that keeps renewing changes its version every heartbeat and
is never taken over, and no wall clock is compared with another.

The clock-bound rule, opt-in (``max_clock_skew``): a holder stamps each write
with its wall clock, read before sending (``sentAt``). If clocks differ by at
most ``max_clock_skew``, a write stamped more than ``leaseDuration +
max_clock_skew`` ago on our wall clock was sent more than a lease ago, so its
holder's lease has run out on its own clock, and the lock may be taken at
once instead of after another lease of watching. Items without a stamp of
their version (the Java client's, malformed ones) keep the clock-free rule;
a lock may be taken when either rule allows it (docs/guarantees.md).

Observations are kept per lock in a bounded LRU so that repeated
non-blocking attempts (which never wait in between) can still take a dead
lock, without the cache growing with every key ever tried.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..clock import Instant
from ..wire.item import LockInfo
from ..wire.layout import LockId

logger = logging.getLogger("dynalock_django.acquire")


def clock_bound_wait(lock: LockInfo, wall_now: float, max_clock_skew: float | None) -> float | None:
    """Seconds from ``wall_now`` until the clock-bound rule lets us take ``lock``; None where it does not apply.

    Negative when the holder's last write is older than its lease plus the
    skew already. A stamp from the future only makes the wait longer: the
    clock-free rule still applies after a lease.
    """
    if max_clock_skew is None or lock.sent_at is None:
        return None
    return lock.sent_at + lock.lease_duration + max_clock_skew - wall_now


@dataclass(frozen=True)
class Observation:
    info: LockInfo
    # Monotonic time at which this version was first seen, taken *after* the
    # response arrived, so a waiter believes the holder's lease ends late.
    seen_at: float
    # Monotonic time from which the clock-bound rule allows a takeover, worked out at first sight
    # (then a wall clock stepped later cannot move it); None where the rule does not apply.
    clock_bound_at: float | None = None

    @property
    def version(self) -> Any:
        return self.info.raw_version

    @property
    def takeover_at(self) -> float:
        """When this client may take this version over: the earlier of the two rules."""
        clock_free_at = self.seen_at + self.info.lease_duration
        return clock_free_at if self.clock_bound_at is None else min(clock_free_at, self.clock_bound_at)

    def may_take_over(self, now: float) -> bool:
        return now >= self.takeover_at


class Observations:
    def __init__(self, *, max_clock_skew: float | None = None, max_size: int = 4096) -> None:
        self._max_clock_skew = max_clock_skew
        self._max_size = max_size
        self._entries: OrderedDict[LockId, Observation] = OrderedDict()
        self._mutex = threading.Lock()

    def saw(self, lock_id: LockId, info: LockInfo, seen: Instant) -> bool:
        """Remember an item read at ``seen``; True when it holds the lock, False when it is released.

        A released item ends what was seen of its holder: kept, a version seen a lease ago (by a
        waiter that read nothing of the item since, a reader kept out by a writer) would make the
        next grant of the free lock a takeover, reported and counted as a dead holder's.
        """
        if info.is_released:
            if info.bad_fencing_token:
                self._observe(lock_id, info, seen)  # the next grant must overwrite exactly that token
            else:
                self.forget(lock_id)
            return False
        self._observe(lock_id, info, seen)
        logger.debug("Lock %r is held by %r", lock_id[0], info.owner_name)
        return True

    def get(self, lock_id: LockId) -> Observation | None:
        if lock_id not in self._entries:  # never seen held (an uncontended acquire's): as the mutex would answer
            return None
        with self._mutex:
            return self._entries.get(lock_id)

    def wake_for_takeover(self, delay: float, lock_ids: Iterable[LockId], now: float) -> float:
        """``delay``, cut to wake just after a holder seen on one of ``lock_ids`` may be taken over, not later."""
        for lock_id in lock_ids:
            observation = self.get(lock_id)
            if observation is not None and observation.takeover_at >= now:
                delay = min(delay, observation.takeover_at - now + 0.001)
        return delay

    def forget(self, lock_id: LockId) -> None:
        if lock_id not in self._entries:  # nothing to forget (every uncontended grant asks)
            return
        with self._mutex:
            self._entries.pop(lock_id, None)

    def takeover_in(self, lock: LockInfo | None, now: Instant) -> float:
        """Seconds until this client may take ``lock`` as it was read.

        0 when there is no item, it is released, or either rule allows it;
        for a version this client never saw, the whole lease, or sooner by
        the clock-bound rule.
        """
        if lock is None or lock.is_released:
            return 0.0
        observation = self.get((lock.key, lock.sort_key))
        if observation is None or observation.version != lock.raw_version:
            observation = self._first_sight(lock, now)
        return max(0.0, observation.takeover_at - now.monotonic)

    def __len__(self) -> int:
        return len(self._entries)

    def _observe(self, lock_id: LockId, info: LockInfo, seen: Instant) -> None:
        with self._mutex:
            previous = self._entries.pop(lock_id, None)
            if previous is not None and previous.version == info.raw_version:
                observation = Observation(info, previous.seen_at, previous.clock_bound_at)
            else:
                observation = self._first_sight(info, seen)
            self._entries[lock_id] = observation
            while len(self._entries) > self._max_size:
                self._entries.popitem(last=False)

    def _first_sight(self, info: LockInfo, seen: Instant) -> Observation:
        wait = clock_bound_wait(info, seen.wall, self._max_clock_skew)
        return Observation(info, seen.monotonic, None if wait is None else seen.monotonic + wait)
