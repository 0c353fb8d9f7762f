"""The one wait of every kind of lock, in a thread or a coroutine: attempt, pause as long as the round says, again.

Each kind of lock is a *round*: what to try (``attempt``: a request or a
few, never a sleep; the single lock's :class:`.Acquisition`, a group's
:class:`.GroupAcquisition`, a permit's :class:`.PermitRound`, a writer's
:class:`.ReadersDrain`), how long to pause before the next try (``delay``,
by the one rule of :mod:`.backoff`; None: the deadline has passed) and what
it gave up with (``gave_up``). The loop owns the rest: a closing client ends
it (ClientClosed), ``ready`` waits without requests for the client's own
holders (or says the deadline came first), and the pause is on the client's
clock in a thread, or on the event loop in a coroutine, each attempt then on
the client's call threads (a coroutine waiting costs no thread). What an
attempt won after its coroutine was cancelled is released, not leaked.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from ..clock import pause
from ..exceptions import ClientClosed
from ..leases.lease import Lease

if TYPE_CHECKING:
    from ..exceptions import DynamoDBError, LockTimeout
    from .parts import EngineParts

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Round(Protocol[T_co]):
    def attempt(self) -> T_co | None: ...

    def delay(self, now: float) -> float | None: ...

    def gave_up(self, timeout: float | None) -> DynamoDBError | LockTimeout: ...


def wait(round_: Round[T], parts: EngineParts, *, ready: Callable[[], bool] | None = None) -> T | None:
    """Attempt until ``round_`` wins (what it won) or gives up (None: the deadline, or ``ready`` said False)."""
    while True:
        if ready is not None and not ready():
            return None
        parts.ensure_open()
        won = round_.attempt()
        if won is not None:
            return won
        delay = round_.delay(parts.clock.monotonic())
        if delay is None:
            return None
        parts.clock.wait(parts.closed, delay)


async def await_(
    round_: Round[T],
    parts: EngineParts,
    *,
    ready: Callable[[], Awaitable[bool]] | None = None,
    finish_first: bool = False,
) -> T | None:
    """:func:`wait` in a coroutine; ``finish_first``: an attempt in flight when cancelled is seen to its end."""
    while True:
        if ready is not None and not await ready():
            return None
        parts.ensure_open()
        won = await parts.calls.run(round_.attempt, if_abandoned=release_abandoned, finish_first=finish_first)
        if won is not None:
            return won
        delay = round_.delay(parts.clock.monotonic())
        if delay is None:
            return None
        await pause(parts.clock, delay)


def wait_for(
    round_: Round[T], timeout: float | None, parts: EngineParts, clean_up: Callable[[], None] | None = None
) -> T:
    """:func:`wait`, then ``clean_up``; what the round gave up with is raised."""
    try:
        won = wait(round_, parts)
    finally:
        if clean_up is not None:
            clean_up()
    if won is None:
        raise round_.gave_up(timeout)
    return won


async def await_for(
    round_: Round[T], timeout: float | None, parts: EngineParts, clean_up: Callable[[], None] | None = None
) -> T:
    """:func:`await_`, then ``clean_up`` on the call threads; what the round gave up with is raised."""
    try:
        won = await await_(round_, parts)
    finally:
        if clean_up is not None:
            with contextlib.suppress(ClientClosed):  # best effort, as the single acquire's: closing ends it
                await parts.calls.run(clean_up)
    if won is None:
        raise round_.gave_up(timeout)
    return won


def release_abandoned(won: object) -> None:
    """Release what an attempt won for a caller that was cancelled meanwhile: a lease, or a group's leases."""
    for lease in won if isinstance(won, list) else [won]:
        if isinstance(lease, Lease):
            lease.release(best_effort=True)


class Decisions(Protocol):
    def delay(self, now: float) -> float | None: ...

    def gave_up(self, timeout: float | None) -> DynamoDBError | LockTimeout: ...


class PlannedRound(Generic[T]):
    """A kind whose decisions are a plan (the single lock's, a group's) and whose attempt is its acquirer's."""

    def __init__(self, plan: Decisions, attempt: Callable[[], T | None]) -> None:
        self.plan = plan
        self.attempt = attempt

    def delay(self, now: float) -> float | None:
        return self.plan.delay(now)

    def gave_up(self, timeout: float | None) -> DynamoDBError | LockTimeout:
        return self.plan.gave_up(timeout)
