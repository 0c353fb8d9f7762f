"""What a waiter has seen of other holders' locks, for clock-free takeover.

A lock may be taken over only when the same record version number has stood
for that item's whole lease duration on *our* monotonic clock. Observations
are kept per lock in a bounded LRU so that repeated non-blocking attempts
(which never wait in between) can still take a dead lock, without the cache
growing with every key ever tried.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from .item import LockInfo

LockId = tuple[str, str | None]


@dataclass(frozen=True)
class Observation:
    info: LockInfo
    # Monotonic time at which this version was first seen, taken *after* the
    # response arrived, so a waiter believes the holder's lease ends late.
    seen_at: float

    @property
    def version(self) -> Any:
        return self.info.raw_version

    def takeover_at(self) -> float:
        return self.seen_at + self.info.lease_duration


class Observations:
    def __init__(self, max_size: int = 4096) -> None:
        self._max_size = max_size
        self._entries: OrderedDict[LockId, Observation] = OrderedDict()
        self._mutex = threading.Lock()

    def observe(self, lock_id: LockId, info: LockInfo, seen_at: float) -> Observation:
        with self._mutex:
            previous = self._entries.pop(lock_id, None)
            if previous is not None and previous.version == info.raw_version:
                observation = Observation(info, previous.seen_at)
            else:
                observation = Observation(info, seen_at)
            self._entries[lock_id] = observation
            while len(self._entries) > self._max_size:
                self._entries.popitem(last=False)
            return observation

    def get(self, lock_id: LockId) -> Observation | None:
        with self._mutex:
            return self._entries.get(lock_id)

    def forget(self, lock_id: LockId) -> None:
        with self._mutex:
            self._entries.pop(lock_id, None)

    def __len__(self) -> int:
        return len(self._entries)
