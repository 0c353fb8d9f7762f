"""What the end of a ``with`` block does when the release of what it held fails.

The rule, the same for a lease, a lease group and every lock of the Django layer:

- The block raised: its exception wins; the release failure is noted on it.
- The block succeeded and the release got no answer (DynamoDB unavailable, a
  time-out, the circuit breaker open) for leases that were held all through the
  block: the work is done, so the caller gets its result. The leases are no longer
  renewed (the release stopped that), so each lock frees itself within one lease;
  the failure is logged once here (WARNING), counted by telemetry
  (``dynalock.lease.release_failed``) and told to the leases' release callbacks
  (``Lease.release_unconfirmed``).
- Anything else is raised: a lease lost during the block as ``LockLost`` (the
  work ran without exclusivity), even when the release failed for another reason
  (which is chained), and a refusal that is not an outage.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Protocol, Self

from ..exceptions import DynamoDBUnavailable, LockLost
from ..wire.display import printable
from ..wire.item import LockInfo

logger = logging.getLogger("dynalock_django.release")


class HeldLease(Protocol):
    """What the rule reads of each lease a block held (a :class:`.lease.Lease`)."""

    @property
    def key(self) -> str: ...

    @property
    def state(self) -> str: ...

    @property
    def release_unconfirmed(self) -> bool: ...

    @property
    def lease_duration(self) -> float: ...

    @property
    def lost_reason(self) -> str | None: ...

    @property
    def lost_to(self) -> LockInfo | None: ...


class ReleasedAtBlockEnd:
    """A base class: ``with`` (and ``async with``) gives the holding itself and releases it at the block's end,
    by the rule above."""

    def release(self, *, best_effort: bool = False) -> bool:
        raise NotImplementedError

    async def arelease(self, *, best_effort: bool = False) -> bool:
        raise NotImplementedError

    def _held_in_block(self) -> Sequence[HeldLease]:
        """The leases whose release the rule judges (a lease itself; a group's members)."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        # A failed release raises, unless the block raised (noted on its exception) or the release got no
        # answer after a block that held the leases to its end.
        release_at_block_end(self.release, exc, self._held_in_block())

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await arelease_at_block_end(self.arelease, exc, self._held_in_block())


def release_at_block_end(
    release: Callable[[], object], exc: BaseException | None, leases: Sequence[HeldLease]
) -> DynamoDBUnavailable | None:
    """Release what a block held (``leases``); the release failure it let pass, else None (see the module)."""
    try:
        release()
    except Exception as error:
        return after_failed_release(error, exc, leases)
    return None


async def arelease_at_block_end(
    arelease: Callable[[], Awaitable[object]], exc: BaseException | None, leases: Sequence[HeldLease]
) -> DynamoDBUnavailable | None:
    """:func:`release_at_block_end` for coroutines."""
    try:
        await arelease()
    except Exception as error:
        return after_failed_release(error, exc, leases)
    return None


def after_failed_release(
    error: Exception, exc: BaseException | None, leases: Sequence[HeldLease]
) -> DynamoDBUnavailable | None:
    """Apply the rule to a release of ``leases`` that raised ``error`` after a block that raised ``exc`` (or None).

    Raises ``error`` unless the rule lets it pass; returns it when it is an unconfirmed release after success.
    """
    keys = ", ".join(f"'{printable(lease.key)}'" for lease in leases) or "no lock"
    if exc is not None:
        # The block's exception wins; keep the release failure visible on it.
        exc.add_note(f"dynalock: releasing {keys} also failed: {error}")
        logger.warning("Releasing %s after an error in its block failed: %s", keys, type(error).__name__)
        return None
    if isinstance(error, DynamoDBUnavailable) and released_unconfirmed(leases):
        longest = max(lease.lease_duration for lease in leases)
        logger.warning(
            "The block holding %s succeeded, but DynamoDB did not confirm the release (%s): the result "
            "stands; the lock is no longer renewed and frees itself within %gs.",
            keys,
            type(error).__name__,
            longest,
        )
        return error
    lost = [lease for lease in leases if lease.state == "lost"]
    if lost:
        # The work ran without exclusivity: say so as LockLost, never as the release's own failure, which
        # callers retry (Celery's autoretry_for DynamoDBUnavailable) and so would do the work a second time.
        first = lost[0]
        raise LockLost(
            f"Lost '{printable(first.key)}' during the block ({first.lost_reason}); its release then failed too.",
            first.lost_to,
        ) from error
    raise error


def released_unconfirmed(leases: Sequence[HeldLease]) -> bool:
    """Every lease was held to the end of its block and let go, and DynamoDB did not confirm some release.

    A lease lost during the block (or whose safe time ran out before the release) is "lost", not "released".
    """
    return (
        bool(leases)
        and all(lease.state == "released" for lease in leases)
        and any(lease.release_unconfirmed for lease in leases)
    )
