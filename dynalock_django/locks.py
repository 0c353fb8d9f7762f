"""``lock_object``, ``lock_model``, ``lock_key``: locks on model rows and names.

Each returns a :class:`KeyLock`, used as ``with`` / ``async with`` (giving the
Lease), as a decorator (a fresh acquisition per call), or directly with
``acquire()`` / ``release()``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar, cast

from asgiref.sync import sync_to_async
from django.db import models

from . import keys, signals
from .client import get_client
from .dynamodb import Lease
from .exceptions import LockNotAcquired, LockTimeout
from .payload import LockData
from .transactions import in_user_transaction, release_when_transaction_ends

F = TypeVar("F", bound=Callable[..., Any])


class KeyLock:
    """A lock on one key, taken by ``acquire()``, ``with`` or ``async with``, or at each call of what it decorates."""

    def __init__(
        self,
        key: str,
        *,
        timeout: float | None = None,
        blocking: bool = True,
        purpose: str = "",
        data: dict[str, Any] | None = None,
        user: Any = None,
        using: str | None = None,
    ) -> None:
        self.key = key
        self.timeout = timeout
        self.blocking = blocking
        self.lock_data = LockData(
            purpose=purpose,
            user_id=None if user is None else str(user.pk),
            username=None if user is None else user.get_username(),
            extra=dict(data or {}),
        )
        self.using = using
        self.lease: Lease | None = None

    def __repr__(self) -> str:
        return f"<KeyLock {self.key!r} {'held' if self.lease and self.lease.is_held() else 'not held'}>"

    def acquire(self) -> Lease:
        """Take the lock: waits up to ``timeout`` (LockTimeout), or not at all when not ``blocking``."""
        timeout = 0.0 if not self.blocking else self.timeout
        try:
            lease = get_client().acquire(self.key, timeout=timeout, data=self.lock_data.to_bytes())
        except LockTimeout as error:
            if self.blocking:
                raise
            raise LockNotAcquired(str(error), error.holder) from error
        _announce(lease)
        self.lease = lease
        return lease

    def release(self, *, best_effort: bool = False) -> None:
        """Release now, or when the enclosing transaction commits or rolls back.

        LockLost if the lease was lost meanwhile (the work it covered was not
        protected all along), unless ``best_effort``.
        """
        lease, self.lease = self.lease, None
        if lease is None:
            return
        if in_user_transaction(self.using):
            if not best_effort:
                lease.ensure_held()  # say it now: after the commit nobody is left to tell
            release_when_transaction_ends(lease, self.using)
        else:
            lease.release(best_effort=best_effort)

    def __enter__(self) -> Lease:
        return self.acquire()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        lease = self.lease
        if exc is None or lease is None:
            self.release()
            return
        # The block's exception wins; a failing release is noted on it, never raised instead.
        try:
            self.release()
        except Exception as error:
            exc.add_note(f"dynalock: releasing {lease.key!r} also failed: {error}")

    async def __aenter__(self) -> Lease:
        # Waiting for a lock blocks: do it off the event loop.
        return await sync_to_async(self.acquire, thread_sensitive=False)()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await sync_to_async(self.__exit__)(exc_type, exc, traceback)

    def __call__(self, function: F) -> F:
        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def async_locked(*args: Any, **kwargs: Any) -> Any:
                async with self._copy():
                    return await function(*args, **kwargs)

            return cast(F, async_locked)

        @functools.wraps(function)
        def locked(*args: Any, **kwargs: Any) -> Any:
            with self._copy():
                return function(*args, **kwargs)

        return cast(F, locked)

    def _copy(self) -> KeyLock:
        clone = KeyLock.__new__(KeyLock)
        clone.__dict__.update(self.__dict__, lease=None)
        return clone


def _announce(lease: Lease) -> None:
    lease.add_release_callback(_send_released)
    lease.add_lost_callback(_send_lost)
    signals.lease_acquired.send(sender=lease.key, lease=lease)


def _send_released(lease: Lease) -> None:
    signals.lease_released.send(sender=lease.key, lease=lease)


def _send_lost(lease: Lease) -> None:
    signals.lease_lost.send(sender=lease.key, lease=lease)


def lock_object(instance: models.Model, **options: Any) -> KeyLock:
    """Lock a saved model instance: ``with lock_object(customer) as lease: ...``."""
    options.setdefault("using", instance._state.db if isinstance(instance, models.Model) else None)
    return KeyLock(keys.key_for_instance(instance), **options)


def lock_model(model: type[models.Model], pk: Any, **options: Any) -> KeyLock:
    """Lock the row ``pk`` of ``model`` without fetching it."""
    return KeyLock(keys.key_for_model(model, pk), **options)


def lock_key(name: str, **options: Any) -> KeyLock:
    """Lock a name: a job, a report, a leader election."""
    return KeyLock(keys.key_for_name(name), **options)
