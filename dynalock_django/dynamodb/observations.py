"""What this client has seen of other holders' locks, and the one rule for taking one over.

A lock may be taken over only when the same record version number has stood
for that item's whole lease duration on *our* monotonic clock: a holder that
keeps renewing changes its version every heartbeat and is never taken over,
and no wall clock is compared with another. Observations are kept per lock in
a bounded LRU so that repeated non-blocking attempts (which never wait in
between) can still take a dead lock, without the cache growing with every
key ever tried.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from .item import LockInfo
from .layout import LockId

logger = logging.getLogger("dynalock_django.acquire")


@dataclass(frozen=True)
class Observation:
    info: LockInfo
    # Monotonic time at which this version was first seen, taken *after* the
    # response arrived, so a waiter believes the holder's lease ends late.
    seen_at: float

    @property
    def version(self) -> Any:
        return self.info.raw_version

    @property
    def takeover_at(self) -> float:
        """When this version will have stood for the item's whole lease on our clock."""
        return self.seen_at + self.info.lease_duration

    def may_take_over(self, now: float) -> bool:
        return now >= self.takeover_at


class Observations:
    def __init__(self, max_size: int = 4096) -> None:
        self._max_size = max_size
        self._entries: OrderedDict[LockId, Observation] = OrderedDict()
        self._mutex = threading.Lock()

    def saw(self, lock_id: LockId, info: LockInfo, seen_at: float) -> bool:
        """Remember an item read at ``seen_at``; True when it holds the lock, False when it is released."""
        if info.is_released:
            if info.bad_fencing_token:
                self._observe(lock_id, info, seen_at)  # the next grant must overwrite exactly that token
            return False
        self._observe(lock_id, info, seen_at)
        logger.debug("Lock %r is held by %r", lock_id[0], info.owner_name)
        return True

    def get(self, lock_id: LockId) -> Observation | None:
        with self._mutex:
            return self._entries.get(lock_id)

    def forget(self, lock_id: LockId) -> None:
        with self._mutex:
            self._entries.pop(lock_id, None)

    def takeover_in(self, lock: LockInfo | None, now: float) -> float:
        """Seconds until this client may take ``lock`` as it was read.

        0 when there is no item, it is released, or its version has stood for
        its lease; the whole lease for a version this client never saw.
        """
        if lock is None or lock.is_released:
            return 0.0
        observation = self.get((lock.key, lock.sort_key))
        if observation is None or observation.version != lock.raw_version:
            return lock.lease_duration
        return max(0.0, observation.takeover_at - now)

    def __len__(self) -> int:
        return len(self._entries)

    def _observe(self, lock_id: LockId, info: LockInfo, seen_at: float) -> None:
        with self._mutex:
            previous = self._entries.pop(lock_id, None)
            first_seen = previous.seen_at if previous is not None and previous.version == info.raw_version else seen_at
            self._entries[lock_id] = Observation(info, first_seen)
            while len(self._entries) > self._max_size:
                self._entries.popitem(last=False)
