"""Waiters of one client waiting for each other: one at a time goes after a key, the others send nothing.

Two rules keep a thousand waiters of one process for one key as cheap as one:

- Turns: of the threads and coroutines of one client that wait for the same
  key, one at a time goes after it (reads, writes, keeps the process's seat
  in the key's line: :mod:`.line_seats`, waits for a local holder); the others
  wait for their turn, first come, first served, a thread on its clock, a
  coroutine on its event loop (no thread blocks). Without it each would look
  on its own, a request each, and each release would wake them all to race.
- The coroutine whose turn it is waits for a lease of this client to end on
  an ``asyncio.Event``, set through ``call_soon_threadsafe`` from whichever
  thread ends the lease (a release, the heartbeat, a closing client); a
  thread waits in :meth:`.Holdings.wait_until_free`.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..clock import Clock
    from ..leases.holdings import Holdings
    from ..wire.layout import LockId


class _Ticket:
    """One waiter's place in a key's line of turns (compared by identity)."""

    # What a place starts with, kept on the class (every acquire takes one, and most never wait).
    # From any thread: the turn is this waiter's now. None: a thread's, made only if the turn is not its at
    # once (an uncontended acquire's is, and makes no event): the waiter that leaves before it calls it.
    wake: Callable[[], None] | None = None
    given = False
    event: threading.Event | None = None  # a thread's, to wait on (made with its ``wake``)


class Turns:
    """Per key, whose turn it is to go after the key, among this client's threads and coroutines."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._mutex = threading.Lock()
        self._lines: dict[LockId, deque[_Ticket]] = {}

    def wait_in_thread(self, lock_id: LockId, deadline: float | None) -> tuple[_Ticket, bool]:
        """Take a place in the key's line and wait for the turn, from a thread: the place, to give back with
        :meth:`leave` when done (whatever this returned), and whether the turn is ours (False: the deadline
        came first)."""
        ticket = _Ticket()
        # From before the place is taken: an interrupt (a signal's exception, checked as _enter's mutex is let go)
        # that lands once it is taken must give it back, or every later waiter of the key waits behind it.
        try:
            if self._enter(lock_id, ticket):  # nobody of this client goes after the key (every uncontended acquire)
                return ticket, True
            got = False
            while not got:
                left = self._left(deadline)
                if left is not None and left <= 0:
                    break
                assert ticket.event is not None  # made by _enter, the turn not being ours
                self._clock.wait(ticket.event, left)
                got = self._given(ticket, deadline)
        except BaseException:
            self.leave(lock_id, ticket)
            raise
        return ticket, got

    @contextlib.asynccontextmanager
    async def turn(self, lock_id: LockId, deadline: float | None) -> AsyncIterator[bool]:
        """Hold the key's turn for the block, from a coroutine; yields False when the deadline came first."""
        loop = asyncio.get_running_loop()
        given = asyncio.Event()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits there any more
                loop.call_soon_threadsafe(given.set)

        ticket = _Ticket()
        ticket.wake = wake
        try:
            got = self._enter(lock_id, ticket)
            if not got:
                left = self._left(deadline)
                if left is None or left > 0:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(left):
                            await given.wait()
                got = self._given(ticket, deadline)
            yield got
        finally:
            self.leave(lock_id, ticket)

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

    def _enter(self, lock_id: LockId, ticket: _Ticket) -> bool:
        with self._mutex:
            line = self._lines.get(lock_id)
            if line is None:  # nobody of this client goes after the key (every uncontended acquire): ours at once
                self._lines[lock_id] = deque((ticket,))
                ticket.given = True
                return True
            line.append(ticket)  # a line is never left empty (``leave``): the turn is another's
            if ticket.wake is None:
                ticket.event = threading.Event()
                ticket.wake = ticket.event.set
            return False

    def _given(self, ticket: _Ticket, deadline: float | None) -> bool:
        """The turn came; past the deadline it is passed on instead (no request starts after a deadline)."""
        left = self._left(deadline)
        with self._mutex:
            return ticket.given and (left is None or left > 0)

    def leave(self, lock_id: LockId, ticket: _Ticket) -> None:
        with self._mutex:
            line = self._lines.get(lock_id)
            if line is None:  # an interrupt came before the ticket took its place: nothing to give back
                return
            if len(line) == 1 and line[0] is ticket:  # alone (every uncontended acquire): nobody to pass it on to
                del self._lines[lock_id]
                return
            try:
                line.remove(ticket)
            except ValueError:  # the same, in a line of others
                return
            following = line[0] if line and ticket.given else None
            if following is not None:
                following.given = True
            if not line:
                del self._lines[lock_id]
        if following is not None and following.wake is not None:  # not given at its arrival: it has its wake
            following.wake()

    def _left(self, deadline: float | None) -> float | None:
        return None if deadline is None else deadline - self._clock.monotonic()
