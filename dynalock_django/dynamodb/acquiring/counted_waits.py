"""The waits of counted locks, in a thread or a coroutine: attempt, pause as long as the round says, again.

A round (:class:`.PermitRound`, :class:`.ReadersDrain`) sends a request or
a few per attempt and never sleeps; these loops do the sleeping: on the
client's clock in a thread (a closing client ends the wait), or on the event
loop in a coroutine, each attempt on the client's call threads (a coroutine
waiting costs no thread). A permit won by an attempt whose caller was
cancelled meanwhile is released, not leaked.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from ..clock import pause
from ..exceptions import ClientClosed

if TYPE_CHECKING:
    import threading

    from ..aws.call_threads import CallThreads
    from ..clock import Clock
    from ..exceptions import DynamoDBError, LockTimeout
    from ..leases.lease import Lease


class Round(Protocol):
    def attempt(self) -> Lease | None: ...

    def delay(self, now: float) -> float | None: ...

    def gave_up(self, timeout: float | None) -> DynamoDBError | LockTimeout: ...


def wait_for(
    round_: Round,
    timeout: float | None,
    *,
    clock: Clock,
    closed: threading.Event,
    ensure_open: Callable[[], None],
    clean_up: Callable[[], None] = lambda: None,
) -> Lease:
    """Attempt until ``round_`` wins, sleeping between attempts; what it gave up with is raised at the deadline."""
    try:
        while True:
            ensure_open()
            lease = round_.attempt()
            if lease is not None:
                return lease
            delay = round_.delay(clock.monotonic())
            if delay is None:
                break
            clock.wait(closed, delay)
    finally:
        clean_up()
    raise round_.gave_up(timeout)


async def await_for(
    round_: Round,
    timeout: float | None,
    *,
    clock: Clock,
    calls: CallThreads,
    ensure_open: Callable[[], None],
    clean_up: Callable[[], None] | None = None,
) -> Lease:
    """:func:`wait_for` in a coroutine: each attempt on the call threads, each pause on the event loop."""
    try:
        while True:
            ensure_open()
            lease = await calls.run(round_.attempt, if_abandoned=release_abandoned)
            if lease is not None:
                return lease
            delay = round_.delay(clock.monotonic())
            if delay is None:
                break
            await pause(clock, delay)
    finally:
        if clean_up is not None:
            with contextlib.suppress(ClientClosed):  # best effort, as the single acquire's: closing ends it
                await calls.run(clean_up)
    raise round_.gave_up(timeout)


def release_abandoned(lease: Lease | None) -> None:
    if lease is not None:
        lease.release(best_effort=True)
