"""``semaphore``: at most N holders of a name at once, each holding one permit with its own lease and token.

    with dynalock_django.semaphore("exports", 3, timeout=10.0) as lease:
        lease.permit, lease.fencing_token

A :class:`SemaphoreLock` is used as every lock of the Django layer is
(:class:`~dynalock_django.locks.HeldLock`): ``with`` / ``async with``, as a
decorator (a permit per call), or ``acquire()`` / ``release()``; it sends the
same signals, and its release waits for the enclosing transaction. The
permit count is part of the name's contract: a caller giving another count
for the same name is refused by the protocol.
"""

from __future__ import annotations

from typing import Any, Unpack

from . import keys
from .client import get_client
from .dynamodb import MAX_PERMITS, Lease
from .exceptions import InvalidLockRequest
from .locks import HeldLock, LockOptions


def check_permits(permits: Any, *, where: str) -> int:
    """``permits`` when it is a whole number from 1 to ``MAX_PERMITS``; else a clear error naming ``where``."""
    if isinstance(permits, bool) or not isinstance(permits, int) or not 1 <= permits <= MAX_PERMITS:
        raise InvalidLockRequest(
            f"{where}={permits!r}: give how many may hold it at once, a whole number of 1 or more "
            f"(at most {MAX_PERMITS}: one request reads them all)."
        )
    return permits


class SemaphoreLock(HeldLock[Lease]):
    """One permit of a semaphore: at most ``permits`` holders of ``name`` at once (see :func:`semaphore`)."""

    def __init__(self, name: str, permits: int, **options: Unpack[LockOptions]) -> None:
        self.permits = check_permits(permits, where="semaphore(permits)")
        self.key = keys.key_for_name(name)
        super().__init__(**options)
        self.name = name

    def __repr__(self) -> str:
        state = f"permit {self.held.permit}" if self.held is not None and self.held.is_held() else "no permit"
        return f"<SemaphoreLock {self.name!r} of {self.permits}, {state}>"

    def _take(self, timeout: float | None) -> Lease:
        counted = get_client().semaphore(self.key, self.permits, described=keys.described(self.key, "name"))
        return counted.acquire(timeout=timeout, data=self.lock_data.to_bytes())

    async def _atake(self, timeout: float | None) -> Lease:
        counted = get_client().semaphore(self.key, self.permits, described=keys.described(self.key, "name"))
        return await counted.aacquire(timeout=timeout, data=self.lock_data.to_bytes())


def semaphore(name: str, permits: int, **options: Unpack[LockOptions]) -> SemaphoreLock:
    """At most ``permits`` holders of ``name`` at once: ``with semaphore("exports", 3, timeout=10.0) as lease: ...``.

    Takes the options of ``lock_key`` (``timeout``, ``blocking``, ``purpose``,
    ``data``, ``user``, ``using``). The lease has ``.permit`` (its index) and
    its own ``.fencing_token``. Costs: see docs/django/semaphores.md.
    """
    return SemaphoreLock(name, permits, **options)
