"""``lock_object``, ``lock_model``, ``lock_key``, ``lock_objects``: locks on model rows and names.

The first three return a :class:`KeyLock` (a row's is its writer, a :class:`RowLock`, which waits for
the row's readers; ``lock_object(row, shared=True)`` a :class:`SharedRowLock`, a reader), ``lock_objects`` an
:class:`ObjectsLock`; each is used as ``with`` / ``async with`` (giving the
Lease, or the LeaseGroup), as a decorator (a fresh acquisition per call), or
directly with ``acquire()`` / ``release()``. Inside ``transaction.atomic()``
the release waits for the transaction to end. ``async with`` waits as a
coroutine (``LockClient.aacquire``): no thread is held while it waits.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, Generic, Self, TypedDict, TypeVar, Unpack, cast

from asgiref.sync import sync_to_async
from django.db import models

from . import keys, signals
from .client import get_client
from .dynamodb import (
    Described,
    Lease,
    LeaseGroup,
    arelease_at_block_end,
    release_at_block_end,
)
from .exceptions import InvalidLockRequest, LockNotAcquired, LockTimeout, WouldDeadlock
from .payload import LockData
from .shared_rows import may_have_readers, readers_declared
from .transactions import in_user_transaction, leases_of, release_when_transaction_ends

F = TypeVar("F", bound=Callable[..., Any])
Held = TypeVar("Held", Lease, LeaseGroup)
Rows = tuple[models.Model | models.QuerySet[Any], ...]  # what lock_objects() was given


class LockOptions(TypedDict, total=False):
    """The options every lock takes (see the docs of ``lock_object``)."""

    timeout: float | None
    blocking: bool
    purpose: str
    data: dict[str, Any] | None
    user: Any
    using: str | None


class HeldLock(Generic[Held]):
    """What every lock of the Django layer shares (one key, many rows, a reader, a semaphore's permit): the ways
    to hold it, and a transaction-aware release."""

    def __init__(
        self,
        *,
        timeout: float | None = None,
        blocking: bool = True,
        purpose: str = "",
        data: dict[str, Any] | None = None,
        user: Any = None,
        using: str | None = None,
    ) -> None:
        self.timeout = timeout
        self.blocking = blocking
        self.lock_data = LockData(
            purpose=purpose,
            user_id=None if user is None else str(user.pk),
            username=None if user is None else user.get_username(),
            extra=dict(data or {}),
        )
        self.using = using
        self.held: Held | None = None

    def _take(self, timeout: float | None) -> Held:
        """Ask the client for the lock, waiting up to ``timeout``."""
        raise NotImplementedError

    async def _atake(self, timeout: float | None) -> Held:
        """:meth:`_take` for coroutines: waiting costs no thread."""
        raise NotImplementedError

    def acquire(self) -> Held:
        """Take the lock: waits up to ``timeout`` (LockTimeout), or not at all when not ``blocking``."""
        with self._refused_if_not_blocking():
            held = self._take(self._wait())
        self.held = held
        try:
            for lease in _taken(held):
                signals.watch(lease)
                signals.lease_acquired.send(sender=lease.key, lease=lease)
        except BaseException:  # a receiver failed: the caller never gets the lock, so nobody would release it
            self.release(best_effort=True)
            raise
        return held

    async def aacquire(self) -> Held:
        """:meth:`acquire` for coroutines: the wait is ``asyncio.sleep``, not a thread."""
        with self._refused_if_not_blocking():
            held = await self._atake(self._wait())
        self.held = held
        try:
            for lease in _taken(held):
                signals.watch(lease)
                await signals.lease_acquired.asend(sender=lease.key, lease=lease)
        except BaseException:  # a receiver failed, or the task was cancelled: release what nobody else would
            await self.arelease(best_effort=True)
            raise
        return held

    def _wait(self) -> float | None:
        return self.timeout if self.blocking else 0.0

    @contextlib.contextmanager
    def _refused_if_not_blocking(self) -> Iterator[None]:
        """A lock that does not block was never waited for: its time-out is a refusal (LockNotAcquired)."""
        try:
            yield
        except LockTimeout as error:
            if self.blocking or isinstance(error, WouldDeadlock):
                raise
            raise LockNotAcquired(str(error), error.holder) from error

    def release(self, *, best_effort: bool = False) -> None:
        """Release now, or when the enclosing transaction commits or rolls back.

        LockLost if the lock was lost meanwhile (the work it covered was not
        protected all along), unless ``best_effort``.
        """
        held, self.held = self.held, None
        if held is None:
            return
        if in_user_transaction(self.using):
            if not best_effort:
                for lease in leases_of(held):
                    lease.ensure_held()  # say it now: after the commit nobody is left to tell
            release_when_transaction_ends(held, self.using)
        else:
            held.release(best_effort=best_effort)

    async def arelease(self, *, best_effort: bool = False) -> None:
        """:meth:`release` for coroutines."""
        # Django's atomic() is sync-only: a coroutine sees one only when sync code inside it called
        # async_to_sync, and then only from that code's thread (connections are per thread).
        if self.held is not None and await sync_to_async(in_user_transaction)(self.using):
            await sync_to_async(self.release)(best_effort=best_effort)
            return
        held, self.held = self.held, None
        if held is not None:
            await held.arelease(best_effort=best_effort)

    def __enter__(self) -> Held:
        return self.acquire()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        # The protocol's rule (docs/guarantees.md): the block's exception wins, the release failure noted on
        # it; after a block that succeeded, a release DynamoDB did not answer lets the result stand.
        release_at_block_end(self.release, exc, self._leases())

    async def __aenter__(self) -> Held:
        return await self.aacquire()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await arelease_at_block_end(self.arelease, exc, self._leases())

    def _leases(self) -> list[Lease]:
        return [] if self.held is None else leases_of(self.held)

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

    def _copy(self) -> Self:
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__, held=None)
        return clone


class KeyLock(HeldLock[Lease]):
    """A lock on one key, taken by ``acquire()``, ``with`` or ``async with``, or at each call of what it decorates.

    ``reentrant=True``: when the calling thread or asyncio task holds the key already, the lock is
    that hold, at no request, and is released by the outermost holder; without it, WouldDeadlock.
    """

    def __init__(self, key: str, *, reentrant: bool = False, **options: Unpack[LockOptions]) -> None:
        super().__init__(**options)
        self.key = key
        self.reentrant = reentrant

    def __repr__(self) -> str:
        return f"<KeyLock {self.key!r} {'held' if self.held and self.held.is_held() else 'not held'}>"

    def described(self) -> Described:
        """How telemetry names it: a named lock (a row's names its model)."""
        return keys.described(self.key, "name")

    def _take(self, timeout: float | None) -> Lease:
        data, described = self.lock_data.to_bytes(), self.described()
        return get_client().acquire(self.key, timeout=timeout, data=data, reentrant=self.reentrant, described=described)

    async def _atake(self, timeout: float | None) -> Lease:
        client, data, described = get_client(), self.lock_data.to_bytes(), self.described()
        return await client.aacquire(
            self.key, timeout=timeout, data=data, reentrant=self.reentrant, described=described
        )


class RowLock(KeyLock):
    """The writer of a row (``lock_object``, ``lock_model``): the row's lock, held once its readers have left.

    Its item is the row's lock item as it has always been (the AWS Java client reads it). Rows of a model
    declared in ``DYNALOCK["SHARED_LOCK_MODELS"]`` may have readers (``lock_object(row, shared=True)``):
    taking the lock keeps new readers out, then waits, within the same ``timeout``, for the readers in
    place to leave or lose their leases. Rows of other models have none, and neither does a row whose
    key leaves no room for readers' keys (a long string pk's, shortened to DynamoDB's limit): their
    lock is taken as a named lock's, two requests with its release and no reader code.
    """

    def __init__(self, key: str, *, model: type[models.Model], **options: Unpack[LockOptions]) -> None:
        super().__init__(key, **options)
        self.model = model

    def described(self) -> Described:
        return keys.described(self.key, "object", self.model)

    def has_readers(self) -> bool:
        """Read at each acquire, as the settings are (``override_settings``)."""
        return may_have_readers(self.key) and readers_declared(self.model)

    def _take(self, timeout: float | None) -> Lease:
        if not self.has_readers():
            return super()._take(timeout)
        readers_writer = get_client().readers_writer(self.key, described=self.described())
        data = self.lock_data.to_bytes()
        return readers_writer.acquire_write(timeout=timeout, data=data, reentrant=self.reentrant)

    async def _atake(self, timeout: float | None) -> Lease:
        if not self.has_readers():
            return await super()._atake(timeout)
        readers_writer = get_client().readers_writer(self.key, described=self.described())
        data = self.lock_data.to_bytes()
        return await readers_writer.aacquire_write(timeout=timeout, data=data, reentrant=self.reentrant)


class SharedRowLock(KeyLock):
    """A reader of a row (``lock_object(row, shared=True)``): readers hold it together, never with its writer.

    A writer waiting keeps new readers out, so a stream of readers cannot starve it.
    """

    def __repr__(self) -> str:
        return f"<SharedRowLock {self.key!r} {'held' if self.held and self.held.is_held() else 'not held'}>"

    def __init__(
        self, key: str, *, model: type[models.Model], reentrant: bool = False, **options: Unpack[LockOptions]
    ) -> None:
        if reentrant:
            raise InvalidLockRequest(
                "lock_object(row, shared=True, reentrant=True): a reader's lock is not reentrant (readers share "
                "the row already); drop reentrant=True."
            )
        if not readers_declared(model):
            label = keys.root_model(model)._meta.label
            raise InvalidLockRequest(
                f"lock_object(row, shared=True): rows of {label} are not declared to have readers. Add {label!r} "
                'to DYNALOCK["SHARED_LOCK_MODELS"] (its rows\' writers then wait for their readers).'
            )
        if not may_have_readers(key):
            raise InvalidLockRequest(
                f"This row's lock key is too long for readers ({len(key.encode())} bytes, a long primary key's): "
                "lock it with lock_object(row) without shared=True."
            )
        super().__init__(key, **options)
        self.model = model

    def described(self) -> Described:
        return keys.described(self.key, "object", self.model)

    def _take(self, timeout: float | None) -> Lease:
        readers_writer = get_client().readers_writer(self.key, described=self.described())
        return readers_writer.acquire_read(timeout=timeout, data=self.lock_data.to_bytes())

    async def _atake(self, timeout: float | None) -> Lease:
        readers_writer = get_client().readers_writer(self.key, described=self.described())
        return await readers_writer.aacquire_read(timeout=timeout, data=self.lock_data.to_bytes())


class ObjectsLock(HeldLock[LeaseGroup]):
    """The locks of many model rows, all or none (see :func:`lock_objects`); holding it gives a LeaseGroup."""

    def __init__(self, sources: Rows, **options: Unpack[LockOptions]) -> None:
        super().__init__(**options)
        self.sources = sources

    def __repr__(self) -> str:
        return f"<ObjectsLock of {len(self.sources)} {'held' if self.held and self.held.is_held() else 'not held'}>"

    def lock_keys(self) -> list[str]:
        """The keys of the rows, querysets read now (so a decorated function locks what they select at each call)."""
        return self._rows()[0]

    def _rows(self) -> tuple[list[str], Described]:
        """The rows' keys, and how telemetry names them: rows, of their model if they share one."""
        instances = list(_instances(self.sources))
        found = dict.fromkeys(keys.key_for_instance(obj) for obj in instances)
        if not found:
            raise InvalidLockRequest("lock_objects() got no objects to lock (an empty queryset?): pass at least one.")
        labels = {keys.model_label(type(obj)) for obj in instances}
        return list(found), Described("object", labels.pop() if len(labels) == 1 else None)  # no key: they differ

    def _take(self, timeout: float | None) -> LeaseGroup:
        lock_keys, described = self._rows()
        data = self.lock_data.to_bytes()
        return get_client().acquire_many(lock_keys, timeout=timeout, data=data, described=described)

    async def _atake(self, timeout: float | None) -> LeaseGroup:
        lock_keys, described = await sync_to_async(self._rows)()  # querysets are read by the ORM, which is sync
        data = self.lock_data.to_bytes()
        return await get_client().aacquire_many(lock_keys, timeout=timeout, data=data, described=described)


def lock_object(instance: models.Model, *, shared: bool = False, **options: Any) -> KeyLock:
    """Lock a saved model instance: ``with lock_object(customer) as lease: ...``.

    ``shared=True`` takes a reader's lock of the row instead: readers hold it
    together, and the row's plain ``lock_object`` (its writer) waits for them.
    ``reentrant=True``: code already holding the row's lock in this thread or
    task shares that hold (same token, no request); see :class:`KeyLock`.
    """
    if not isinstance(shared, bool):
        raise InvalidLockRequest(f"lock_object(shared={shared!r}): pass True (a reader) or False (the writer).")
    options.setdefault("using", instance._state.db if isinstance(instance, models.Model) else None)
    return (SharedRowLock if shared else RowLock)(keys.key_for_instance(instance), model=type(instance), **options)


def lock_model(model: type[models.Model], pk: Any, **options: Any) -> KeyLock:
    """Lock the row ``pk`` of ``model`` without fetching it (its writer, as ``lock_object``)."""
    return RowLock(keys.key_for_model(model, pk), model=model, **options)


def lock_key(name: str, **options: Any) -> KeyLock:
    """Lock a name: a job, a report, a leader election."""
    return KeyLock(keys.key_for_name(name), **options)


def lock_objects(
    *instances_or_querysets: models.Model | models.QuerySet[Any], **options: Unpack[LockOptions]
) -> ObjectsLock:
    """Lock many saved rows at once, all or none: ``with lock_objects(customer, duplicate) as group: ...``.

    Querysets are read when the lock is taken. Two requests per 100 free
    rows (a DynamoDB transaction, and a read of the tokens it wrote), and
    never a deadlock with another caller locking an overlapping set in
    another order.
    """
    using = {
        source.db if isinstance(source, models.QuerySet) else source._state.db for source in instances_or_querysets
    } - {None}
    if len(using) > 1:
        raise InvalidLockRequest(
            f"lock_objects() got rows of several databases ({', '.join(sorted(map(str, using)))}): its lock is "
            "released when one database's transaction ends; lock each database's rows separately."
        )
    options.setdefault("using", next(iter(using), None))
    return ObjectsLock(instances_or_querysets, **options)


def _taken(held: Lease | LeaseGroup) -> list[Lease]:
    """The leases ``held`` was granted now: a reentrant lock's handle on a hold was signalled with that hold."""
    return [lease for lease in leases_of(held) if not lease.reentered]


def _instances(sources: Rows) -> Iterator[models.Model]:
    for source in sources:
        if isinstance(source, models.QuerySet):
            yield from source.all()  # a fresh query each time: a decorated function's calls see current rows
        else:
            yield source
