"""A held lock, as its holder sees it: what it may rely on, and what it may do.

The protocol's side of the same lease (the versions its writes are
conditioned on, their lock, who hears when it ends) is a
:class:`~.lease_record.LeaseRecord`, reached with :func:`record_of`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from ..exceptions import LockLost
from .block_end import ReleasedAtBlockEnd
from .lease_record import LeaseRecord, State

if TYPE_CHECKING:
    from ..clock import Clock
    from ..telemetry import Described
    from ..wire.item import LockInfo
    from ..wire.layout import LockId
    from ..wire.waiters import Waiter

LostCallback = Callable[["Lease"], None]


class LeaseClient(Protocol):
    """What a lease asks of the client that granted it (a LockClient)."""

    def release(self, lease: Lease, *, best_effort: bool = False) -> bool: ...

    def extend(self, lease: Lease, lease_duration: float | None = None) -> None: ...

    async def arelease(self, lease: Lease, *, best_effort: bool = False) -> bool: ...

    async def aextend(self, lease: Lease, lease_duration: float | None = None) -> None: ...


class Lease(ReleasedAtBlockEnd):
    """A lock this process holds, renewed in the background until released.

    ``remaining()`` is the *safe* time left: counted from the start of the
    last successful write, so the holder always believes its lease ends
    earlier than any waiter does. When it reaches zero, or the heartbeat finds
    the lock taken over or released by someone else, the lease is lost: the
    ``on_lost`` callbacks run (on the heartbeat thread or a renewal worker) and
    ``wait_until_lost()`` returns.

    Use it as a context manager to release it at the end of a block.

    A lease with ``keep_alive`` False is *detached*: its owner renews it from
    elsewhere (``LockClient.lease()``), so no heartbeat renews it, it is never
    reported lost for running out, and ``remaining()`` counts only from this
    object's own last write.

    A lease given by a reentrant acquire (``reentered``) is a handle on the lease its context
    already held: the same lock, token and heartbeat; releasing it releases the lock only when
    it is the hold's last handle (see docs/protocol.md, "Reentrant locks").
    """

    def __init__(self, client: LeaseClient, record: LeaseRecord, *, reentered: bool = False) -> None:
        self._client = client
        self._record = record
        self._reentered = reentered

    def __repr__(self) -> str:
        return (
            f"<Lease {self.key!r} owner={self.owner_name!r} token={self.fencing_token} "
            f"{self.state} remaining={self.remaining():.2f}s>"
        )

    @property
    def key(self) -> str:
        return self._record.key

    @property
    def sort_key(self) -> str | None:
        return self._record.sort_key

    @property
    def lock_id(self) -> LockId:
        return self._record.lock_id

    @property
    def owner_name(self) -> str:
        return self._record.owner_name

    @property
    def fencing_token(self) -> int:
        return self._record.fencing_token

    @property
    def permit(self) -> int | None:
        """Which permit of a semaphore (or reader of a readers-writer lock) this lease holds; None for a plain lock."""
        return self._record.permit

    @property
    def described(self) -> Described | None:
        """How telemetry names this lock: as its acquire's caller described it (None: not described)."""
        return self._record.described

    @property
    def reentered(self) -> bool:
        """True for a lease a reentrant acquire gave without a request: the context held the lock already."""
        return self._reentered

    @property
    def data(self) -> bytes | None:
        return self._record.data

    @property
    def lease_duration(self) -> float:
        """Seconds the lease lasts from its last successful write (``extend`` may change it)."""
        return self._record.lease_duration

    @property
    def acquired_at(self) -> datetime | None:
        """When this client was granted the lock (wall clock, for display); None for a handle on a detached lock."""
        return self._record.acquired_at

    @property
    def record_version_number(self) -> str | None:
        return self._record.record_version_number

    @property
    def keep_alive(self) -> bool:
        """True when this client's heartbeat renews the lease; False for a detached lease."""
        return self._record.keep_alive

    @property
    def waiters(self) -> tuple[Waiter, ...]:
        """Who asked for the lock next, first asked first, as the grant or the last renewal found them."""
        return self._record.waiters

    @property
    def state(self) -> State:
        """ "held", "released" (by this process) or "lost"."""
        return self._record.state

    @property
    def lost_reason(self) -> str | None:
        return self._record.lost_reason

    @property
    def lost_to(self) -> LockInfo | None:
        """The item as found when the lease was lost to someone else (None if unknown, or deleted)."""
        return self._record.lost_to

    @property
    def release_unconfirmed(self) -> bool:
        """True when this process let go of the lease but DynamoDB did not confirm the release (it was unavailable).

        The lease is no longer renewed, so the lock frees itself within one lease (``lease_duration``).
        """
        return self._record.release_unconfirmed

    @property
    def safe_until(self) -> float:
        """The monotonic time at which the holder must stop trusting the lease."""
        return self._record.safe_until

    def is_held(self) -> bool:
        return self.remaining() > 0

    def remaining(self) -> float:
        """Seconds this holder may still rely on the lock; 0 once lost or released."""
        return self._record.remaining()

    def ensure_held(self) -> None:
        """Raise LockLost unless the lease is still safely held."""
        if not self.is_held():
            raise LockLost(f"Lock {self.key!r} is no longer held: {self.lost_reason or self.state}", self.lost_to)

    def release(self, *, best_effort: bool = False) -> bool:
        """Release the lock; see :meth:`LockClient.release`."""
        return self._client.release(self, best_effort=best_effort)

    def extend(self, lease_duration: float | None = None) -> None:
        """Renew now (a manual heartbeat), optionally with a new lease duration."""
        self._client.extend(self, lease_duration)

    async def arelease(self, *, best_effort: bool = False) -> bool:
        """:meth:`release` for coroutines."""
        return await self._client.arelease(self, best_effort=best_effort)

    async def aextend(self, lease_duration: float | None = None) -> None:
        """:meth:`extend` for coroutines."""
        await self._client.aextend(self, lease_duration)

    def add_lost_callback(self, callback: LostCallback) -> None:
        """Call ``callback(lease)`` when the lease is lost (at once if it already is)."""
        self._record.add_lost_callback(functools.partial(callback, self))

    def add_release_callback(self, callback: LostCallback) -> None:
        """Call ``callback(lease)`` once this process has released the lease, however it was released."""
        self._record.add_release_callback(functools.partial(callback, self))

    def wait_until_lost(self, timeout: float | None = None) -> bool:
        """Block until the lease is lost; False on time-out. A release does not count."""
        return self._record.clock.wait(self._record.lost, timeout)

    def _held_in_block(self) -> list[Lease]:
        return [self]


def record_of(lease: Lease) -> LeaseRecord:
    """The protocol's side of ``lease``: for the lease writes, the heartbeat and the holdings, not for holders."""
    return lease._record


def detached_handle(
    client: LeaseClient, clock: Clock, lock_id: LockId, *, owner_name: str, fencing_token: int, lease_duration: float
) -> Lease:
    """A lease on a detached lock granted elsewhere; nothing is known about it until it is renewed."""
    record = LeaseRecord(
        clock,
        key=lock_id[0],
        sort_key=lock_id[1],
        owner_name=owner_name,
        version=None,
        fencing_token=fencing_token,
        data=None,
        lease_duration=lease_duration,
        valid_from=-math.inf,
        acquired_at=None,
        keep_alive=False,
    )
    return Lease(client, record)
