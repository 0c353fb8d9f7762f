"""The leases this process holds and its heartbeat renews, and its threads waiting for each other.

Threads of one client waiting for a lock another of its threads holds wait
here, on the client's clock, and send nothing to DynamoDB. Coroutines wait
on their own event loop instead: they subscribe with :meth:`Holdings.on_free`
(:mod:`.turns`), and are called back from the thread that ends the lease.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ..wire.item import LockInfo
from .lease import record_of

if TYPE_CHECKING:
    from ..clock import Clock
    from ..wire.layout import LockId
    from .lease import Lease


class Holdings:
    def __init__(self, clock: Clock, closed: threading.Event) -> None:
        self._clock = clock
        self._closed = closed
        self._mutex = threading.Lock()
        # Set, and replaced by a new one, whenever a lease ends: the threads waiting for a lock look again.
        self._lease_ended = threading.Event()
        self._end_watched = False  # a thread took _lease_ended to wait on: the next end replaces it (else keep it)
        self._held: dict[LockId, Lease] = {}
        self._listeners: dict[LockId, list[Callable[[], None]]] = {}

    def __len__(self) -> int:
        return len(self._held)

    def leases(self) -> list[Lease]:
        with self._mutex:
            return list(self._held.values())

    def get(self, lock_id: LockId) -> Lease | None:
        with self._mutex:
            return self._held.get(lock_id)

    def add(self, lease: Lease) -> None:
        lock_id = record_of(lease).lock_id
        with self._mutex:
            self._held[lock_id] = lease

    def forget(
        self,
        lease: Lease,
        *,
        released: bool = False,
        confirmed: bool = True,
        lost: tuple[str, LockInfo | None] | None = None,
        superseded: bool = True,
    ) -> None:
        """Stop renewing ``lease``, record why, and wake the threads waiting for its lock.

        ``released`` by this process (``confirmed`` False: DynamoDB did not answer the release), or ``lost``.
        """
        record = record_of(lease)
        lock_id = record.lock_id
        with self._mutex:
            if self._held.get(lock_id) is lease:
                del self._held[lock_id]
            if self._end_watched:
                self._announce_end()
            waiting = self._listeners.get(lock_id)
            listeners = list(waiting) if waiting else ()
        for wake in listeners:
            wake()
        if released:
            record.mark_released(confirmed=confirmed)
        elif lost is not None:
            record.mark_lost(lost[0], lost[1], superseded=superseded)

    def wake_waiters(self) -> None:
        """The client closed: the threads waiting here stop waiting."""
        with self._mutex:
            self._announce_end()
            listeners = [wake for waiting in self._listeners.values() for wake in waiting]
        for wake in listeners:
            wake()

    @contextlib.contextmanager
    def on_free(self, lock_id: LockId, wake: Callable[[], None]) -> Iterator[bool]:
        """For the block, call ``wake()`` (from any thread) whenever a lease on the lock ends; yields: is it held?

        Subscribing and looking are one step, so a lease that ends right after the look still wakes.
        """
        with self._mutex:
            self._listeners.setdefault(lock_id, []).append(wake)
            held = lock_id in self._held and not self._closed.is_set()
        try:
            yield held
        finally:
            with self._mutex:
                waiting = self._listeners[lock_id]
                waiting.remove(wake)
                if not waiting:
                    del self._listeners[lock_id]

    def wait_until_free(self, lock_id: LockId, deadline: float | None) -> bool:
        """Wait, without asking DynamoDB, while another thread of this client holds the lock; False at the deadline."""
        if lock_id not in self._held:  # the usual acquire: nobody here holds it (a look the mutex would not change)
            return True
        while True:
            with self._mutex:
                if lock_id not in self._held or self._closed.is_set():
                    return True
                ended = self._lease_ended
                self._end_watched = True
            left = None if deadline is None else deadline - self._clock.monotonic()
            if left is not None and left <= 0:
                return False
            self._clock.wait(ended, left)

    def _announce_end(self) -> None:
        """Under the mutex: wake the threads waiting on the event; a new one only if one was taken (the usual
        release has no waiter here, and an event costs a lock and a condition to make)."""
        if self._end_watched:
            self._lease_ended.set()
            self._lease_ended = threading.Event()
            self._end_watched = False

    def holder(self, lock_id: LockId) -> LockInfo | None:
        """The lease this client holds on the lock, described as its item would be."""
        lease = self.get(lock_id)
        if lease is None:
            return None
        return LockInfo(
            key=lease.key,
            sort_key=lease.sort_key,
            owner_name=lease.owner_name,
            lease_duration=lease.lease_duration,
            record_version_number=lease.record_version_number,
            fencing_token=lease.fencing_token,
            data=lease.data,
            is_released=False,
            acquired_at=lease.acquired_at,
            renewed_at=None,
            released_by=None,
        )
