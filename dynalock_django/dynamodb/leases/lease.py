"""A held lock: what the holder knows about it and how long it may trust it."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Literal, Protocol

from ..exceptions import DynalockError, LockLost
from ..wire.display import printable
from ..wire.writes import Detached, Holding, KeptAlive

if TYPE_CHECKING:
    from ..clock import Clock
    from ..wire.item import LockInfo
    from ..wire.waiters import Waiter

logger = logging.getLogger("dynalock_django.heartbeat")

LostCallback = Callable[["Lease"], None]
State = Literal["held", "released", "lost"]


class LeaseClient(Protocol):
    """What a lease asks of the client that granted it (a LockClient)."""

    def release(self, lease: Lease, *, best_effort: bool = False) -> bool: ...

    def extend(self, lease: Lease, lease_duration: float | None = None) -> None: ...

    async def arelease(self, lease: Lease, *, best_effort: bool = False) -> bool: ...

    async def aextend(self, lease: Lease, lease_duration: float | None = None) -> None: ...


class Lease:
    """A lock this process holds, renewed in the background until released.

    ``remaining()`` is the *safe* time left: counted from the start of the
    last successful write, so the holder always believes its lease ends
    earlier than any waiter does. When it reaches zero, or the heartbeat finds
    the lock taken over or released by someone else, the lease is lost: the
    ``on_lost`` callbacks run (on the heartbeat thread) and
    ``wait_until_lost()`` returns.

    Use it as a context manager to release it at the end of a block.

    A lease with ``keep_alive`` False is *detached*: its owner renews it from
    elsewhere (``LockClient.lease()``), so no heartbeat renews it, it is never
    reported lost for running out, and ``remaining()`` counts only from this
    object's own last write.
    """

    def __init__(
        self,
        client: LeaseClient,
        clock: Clock,
        *,
        key: str,
        sort_key: str | None,
        owner_name: str,
        version: str | None,
        fencing_token: int,
        data: bytes | None,
        lease_duration: float,
        valid_from: float,
        acquired_at: datetime | None,
        keep_alive: bool,
        waiters: tuple[Waiter, ...] = (),
    ) -> None:
        self.key = key
        self.sort_key = sort_key
        self.owner_name = owner_name
        self.fencing_token = fencing_token
        self.data = data
        self.lease_duration = lease_duration
        self.acquired_at = acquired_at
        self.lost_reason: str | None = None
        self.lost_to: LockInfo | None = None
        # Who asked for the lock next, first asked first, as the grant or a detached lease's last renewal found them.
        self.waiters = waiters

        self._keep_alive = keep_alive
        self._client = client
        self._clock = clock
        self._pid = os.getpid()
        # The version we last confirmed, then versions we tried to write whose
        # outcome is unknown: the next write is conditioned on any of them.
        # A handle on a lock granted elsewhere has written none yet.
        self._versions: list[str] = [version] if version is not None else []
        self._valid_from = valid_from
        self._state: State = "held"
        # Lost because another writer changed the item (not merely expired):
        # a release would only fail its condition, so it is not attempted.
        self._superseded = False
        self._lost = threading.Event()
        self._callbacks: list[LostCallback] = []
        self._release_callbacks: list[LostCallback] = []
        # Serializes writes to this lease (heartbeat, extend, release); re-entrant
        # because an on_lost callback may release the lease it is told about.
        self._write_lock = threading.RLock()

    def __repr__(self) -> str:
        return (
            f"<Lease {self.key!r} owner={self.owner_name!r} token={self.fencing_token} "
            f"{self._state} remaining={self.remaining():.2f}s>"
        )

    @property
    def record_version_number(self) -> str | None:
        return self._versions[0] if self._versions else None

    @property
    def keep_alive(self) -> bool:
        """True when this client's heartbeat renews the lease; False for a detached lease."""
        return self._keep_alive

    @property
    def lock_id(self) -> tuple[str, str | None]:
        return (self.key, self.sort_key)

    def is_held(self) -> bool:
        return self.remaining() > 0

    def remaining(self) -> float:
        """Seconds this holder may still rely on the lock; 0 once lost or released."""
        if self._state != "held" or self._pid != os.getpid():
            return 0.0
        return max(0.0, self.safe_until - self._clock.monotonic())

    @property
    def safe_until(self) -> float:
        """The monotonic time at which the holder must stop trusting the lease."""
        return self._valid_from + self.lease_duration

    def ensure_held(self) -> None:
        """Raise LockLost unless the lease is still safely held."""
        if not self.is_held():
            raise LockLost(
                f"Lock {self.key!r} is no longer held: {self.lost_reason or self._state}",
                self.lost_to,
            )

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
        self._callbacks.append(callback)
        if self._lost.is_set():
            self._run_callback(callback)

    def add_release_callback(self, callback: LostCallback) -> None:
        """Call ``callback(lease)`` once this process has released the lease, however it was released."""
        self._release_callbacks.append(callback)

    def wait_until_lost(self, timeout: float | None = None) -> bool:
        """Block until the lease is lost; False on time-out. A release does not count."""
        return self._lost.wait(timeout)

    def __enter__(self) -> Lease:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        release_at_block_end(self.release, exc, repr(self.key))

    # The protocol's side: what its writes read and change, each under ``write_lock``.

    @property
    def write_lock(self) -> threading.RLock:
        """Held by every write to this lease (heartbeat, extend, release), so they never overlap.

        Re-entrant: an ``on_lost`` callback may release the lease it is told about.
        """
        return self._write_lock

    @property
    def state(self) -> State:
        return self._state

    @property
    def superseded(self) -> bool:
        """Lost because another writer changed the item: a release would only fail its condition."""
        return self._superseded

    @property
    def valid_from(self) -> float:
        """The monotonic time the last successful write to this lease started (its lease counts from there)."""
        return self._valid_from

    @property
    def process_id(self) -> int:
        return self._pid

    @property
    def belongs_to_this_process(self) -> bool:
        """False in a forked child: the parent's leases stay the parent's."""
        return self._pid == os.getpid()

    def holding(self) -> Holding:
        """How this lease's writes recognise its holding (the rule is :func:`.writes._still_held`'s)."""
        if self._keep_alive:
            return KeptAlive(self.owner_name, tuple(self._versions))
        return Detached(self.owner_name, self.fencing_token)

    def add_unanswered_version(self, version: str) -> None:
        """A write of ``version`` got no answer: it may have landed, so later writes accept it too."""
        self._versions.append(version)

    def renewed(
        self, version: str, started: float, lease_duration: float, waiters: tuple[Waiter, ...] | None = None
    ) -> None:
        """A renewal that started at ``started`` (monotonic) stored ``version`` (and found ``waiters``, if told)."""
        if waiters is not None:
            self.waiters = waiters
        self._versions = [version]
        self._valid_from = started
        self.lease_duration = lease_duration

    def mark_released(self) -> None:
        self._state = "released"
        for callback in list(self._release_callbacks):
            self._run_callback(callback)

    def mark_lost(self, reason: str, current: LockInfo | None = None, *, superseded: bool) -> None:
        """Report the lease lost (once): ``on_lost`` callbacks run, ``wait_until_lost()`` returns."""
        if self._state != "held":
            return
        self._state = "lost"
        self._superseded = superseded
        self.lost_reason = reason
        self.lost_to = current
        # A kept-alive lease lost is news for this process; a detached one's owner is told by the caller.
        level = logging.WARNING if self._keep_alive else logging.INFO
        logger.log(level, "Lost lock %r (token %s): %s", self.key, self.fencing_token, reason)
        self._lost.set()
        for callback in list(self._callbacks):
            self._run_callback(callback)

    def _run_callback(self, callback: LostCallback) -> None:
        try:
            callback(self)
        except Exception:
            # A broken callback must not stop the heartbeat of other leases, nor a release.
            logger.exception("Lease callback %r for %r raised", callback, self.key)


def release_at_block_end(release: Callable[[], object], exc: BaseException | None, what: str) -> None:
    """Release what a ``with`` block held; a failure is raised, unless the block raised: its exception wins."""
    try:
        release()
    except DynalockError as error:
        if exc is None:
            raise
        # Keep the release failure visible on the block's own exception.
        exc.add_note(f"dynalock: releasing {what} also failed: {error}")
        logger.warning("Releasing %s after an error in its block failed: %s", what, error)


def lost_message(lease: Lease, current: LockInfo | None) -> str:
    if current is None:
        return f"the lock item {lease.key!r} was deleted by someone else"
    if current.is_released:
        by = f" by {printable(current.released_by)}" if current.released_by else ""
        return f"the lock {lease.key!r} was released{by}"
    return f"the lock {lease.key!r} was taken over by {current.owner_name!r}"
