"""Coroutines of one client waiting for each other on their event loop: no thread blocks, nothing is sent.

Two rules keep a thousand coroutines waiting for one key cheap:

- Turns: of the coroutines of one event loop that want the same key, one at
  a time goes after it (reads, writes, waits for a local holder); the others
  queue on an ``asyncio.Lock``, first come, first served. Without it each
  release would wake them all to race for the key, a request each.
- The coroutine whose turn it is waits for a lease of this client to end on
  an ``asyncio.Event``, set through ``call_soon_threadsafe`` from whichever
  thread ends the lease (a release, the heartbeat, a closing client).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..clock import Clock
    from ..leases.holdings import Holdings
    from ..wire.layout import LockId


@dataclass
class _Queue:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0  # coroutines in the queue or holding the turn: at 0 the queue is dropped


class Turns:
    """Per event loop and key, whose turn it is to go after the key."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._mutex = threading.Lock()  # a client may serve several event loops, each in its thread
        self._queues: dict[tuple[asyncio.AbstractEventLoop, LockId], _Queue] = {}

    @contextlib.asynccontextmanager
    async def turn(self, lock_id: LockId, deadline: float | None) -> AsyncIterator[bool]:
        """Hold the key's turn for the block; yields False when the deadline came first."""
        place = (asyncio.get_running_loop(), lock_id)
        with self._mutex:
            queue = self._queues.setdefault(place, _Queue())
            queue.users += 1
        try:
            got = await self._within(queue.lock, deadline)
            try:
                yield got
            finally:
                if got:
                    queue.lock.release()
        finally:
            with self._mutex:
                queue.users -= 1
                if not queue.users:
                    del self._queues[place]

    async def wait_until_free(self, holdings: Holdings, lock_id: LockId, deadline: float | None) -> bool:
        """Wait while another holder of this client has the lock; False at the deadline."""
        loop = asyncio.get_running_loop()
        while True:
            ended = asyncio.Event()

            def wake(ended: asyncio.Event = ended) -> None:
                with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits there any more
                    loop.call_soon_threadsafe(ended.set)

            with holdings.on_free(lock_id, wake) as held:
                if not held:
                    return True
                left = self._left(deadline)
                if left is not None and left <= 0:
                    return False
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(left):
                        await ended.wait()

    async def _within(self, lock: asyncio.Lock, deadline: float | None) -> bool:
        left = self._left(deadline)
        if left is not None and left <= 0 and lock.locked():
            return False
        try:
            async with asyncio.timeout(left):
                await lock.acquire()
        except TimeoutError:
            return False
        return True

    def _left(self, deadline: float | None) -> float | None:
        return None if deadline is None else deadline - self._clock.monotonic()
