"""``with idempotency(key, fingerprint=...) as attempt:``: work done once per key, its result replayed after.

The first caller with a key holds the key's lock (a heartbeated lease) while
it works, and ``attempt.complete(result)`` releases it and stores the result
beside it in one conditional write that only the live holder can make
(``LockClient.complete``). Later callers get the result back
(``attempt.replayed``, ``attempt.result``) without running anything; a caller
that comes while the first still works gets IdempotencyKeyInUse (its
``retry_after`` is the holder's lease), one with another fingerprint
IdempotencyKeyReused. A block that ends without ``complete()`` (it raised, or
chose not to keep its result) frees the key: the next caller runs. A holder
that dies frees it within one lease.

Requests: a replay is one read; a first run two reads (before and after
taking the lock: another run may have completed in between) and two writes
(the grant, then the completion). docs/idempotency.md has the table.
"""

from __future__ import annotations

import json
import logging
import math
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .. import keys
from ..client import get_client
from ..contention import retry_seconds
from ..counters import idempotency_answered
from ..dynamodb import CompletionRecord, LockInfo
from ..exceptions import IdempotencyKeyInUse, IdempotencyKeyReused, InvalidLockRequest, LockNotAcquired
from ..locks import KeyLock
from ..payload import LockData
from . import stored_result
from .stored_result import MAX_STORED_BYTES, StoredResult

if TYPE_CHECKING:
    from ..dynamodb import Lease

logger = logging.getLogger("dynalock_django.idempotency")

DEFAULT_TTL = 86400
# Where the lock item's data keeps the in-flight run's fingerprint, so a refusal can tell 409 from 422.
FINGERPRINT = "fingerprint"


class IdempotencyAttempt:
    """One use of a key: either a replay (``replayed``, ``result``) or the first run, which calls ``complete``."""

    def __init__(self, scope: Idempotency, lock: KeyLock | None = None, stored: StoredResult | None = None) -> None:
        self._scope = scope
        self._lock = lock
        self.replayed = stored is not None
        self.stored = stored
        self.result: Any = _result_of(stored) if stored is not None else None
        self.completed = False

    @property
    def lease(self) -> Lease | None:
        """The key's lease while this first run holds it; None for a replay, and once completed or freed."""
        return self._lock.held if self._lock is not None else None

    def complete(self, result: Any) -> bool:
        """Keep ``result`` (JSON-serialisable, or bytes) for the key's ttl and release the key; True if stored.

        LockLost (nothing stored) when this run lost its lease: a later run may
        be at work. A result over MAX_STORED_BYTES compressed is not stored
        (one WARNING), and the key is freed.
        """
        kind, payload = _serialised(result)
        return self.keep(kind, payload)

    async def acomplete(self, result: Any) -> bool:
        """:meth:`complete` for coroutines."""
        kind, payload = _serialised(result)
        return await self.akeep(kind, payload)

    def keep(self, kind: str, payload: bytes, meta: dict[str, Any] | None = None) -> bool:
        """Store ``payload`` as a result of ``kind`` (``meta``: what the kind needs to rebuild it); see complete."""
        value, lease = self._completion(kind, payload, meta)
        if value is None or lease is None:
            self.free()
            return False
        try:
            get_client().complete(lease, value, keep_for=self._scope.ttl)
        except BaseException:
            lease.release(best_effort=True)  # unanswered: it may still be ours, and must not be renewed forever
            raise
        self.completed = True
        return True

    async def akeep(self, kind: str, payload: bytes, meta: dict[str, Any] | None = None) -> bool:
        """:meth:`keep` for coroutines."""
        value, lease = self._completion(kind, payload, meta)
        if value is None or lease is None:
            await self.afree()
            return False
        try:
            await get_client().acomplete(lease, value, keep_for=self._scope.ttl)
        except BaseException:
            await lease.arelease(best_effort=True)
            raise
        self.completed = True
        return True

    def free(self) -> None:
        """Let the key go without a result: the next caller runs (a failure, a result not worth keeping)."""
        if self._lock is not None:
            self._lock.release(best_effort=True)

    async def afree(self) -> None:
        """:meth:`free` for coroutines."""
        if self._lock is not None:
            await self._lock.arelease(best_effort=True)

    def _completion(self, kind: str, payload: bytes, meta: dict[str, Any] | None) -> tuple[bytes | None, Lease | None]:
        """The value to store and the lease to complete (taken from the lock: it is released by the completion)."""
        if self.replayed or self._lock is None or self.completed:
            raise InvalidLockRequest("This attempt is a replay, or completed already: it has nothing to complete.")
        value = stored_result.encode(self._scope.fingerprint, kind, payload, meta)
        if len(value) > MAX_STORED_BYTES:
            logger.warning(
                "The result for idempotency key %r is %d bytes compressed, over the %d-byte limit "
                "(MAX_STORED_BYTES, DynamoDB's 400 KB item): not stored, the key is freed and a retry runs again.",
                self._scope.key,
                len(value),
                MAX_STORED_BYTES,
            )
            return None, None
        lease, self._lock.held = self._lock.held, None
        return value, lease


class Idempotency:
    """``with idempotency(key, ...) as attempt`` (or ``async with``); see :func:`idempotency`."""

    def __init__(
        self, key: str, *, fingerprint: str = "", ttl: float = DEFAULT_TTL, purpose: str = "", user: Any = None
    ) -> None:
        if not isinstance(key, str) or not key:
            raise InvalidLockRequest(f"idempotency(): the key must be a non-empty string, not {key!r}.")
        if not isinstance(fingerprint, str):
            raise InvalidLockRequest(f"idempotency(fingerprint={fingerprint!r}): pass a string (a hash of the work).")
        if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 0 < ttl < math.inf:
            raise InvalidLockRequest(f"idempotency(ttl={ttl!r}): pass how many seconds to keep the result, e.g. 86400.")
        self.key = key
        self.lock_key = keys.key_for_name(f"idempotent {key}")
        self.fingerprint = fingerprint
        self.ttl = float(ttl)
        self.purpose = purpose or "idempotent"
        self.user = user
        self.attempt: IdempotencyAttempt | None = None

    def _lock(self) -> KeyLock:
        return KeyLock(
            self.lock_key, blocking=False, purpose=self.purpose, user=self.user, data={FINGERPRINT: self.fingerprint}
        )

    def __enter__(self) -> IdempotencyAttempt:
        client = get_client()
        replay = self._replay(client.get_record(self.lock_key))
        if replay is not None:
            return self._began(replay)
        lock = self._lock()
        try:
            lock.acquire()
        except LockNotAcquired as refused:
            raise self._refusal(refused.holder) from refused
        try:  # another run may have completed between our read and our grant
            replay = self._replay(client.get_record(self.lock_key))
        except BaseException:
            lock.release(best_effort=True)
            raise
        if replay is not None:
            lock.release(best_effort=True)
            return self._began(replay)
        return self._began(IdempotencyAttempt(self, lock))

    async def __aenter__(self) -> IdempotencyAttempt:
        client = get_client()
        replay = self._replay(await client.aget_record(self.lock_key))
        if replay is not None:
            return self._began(replay)
        lock = self._lock()
        try:
            await lock.aacquire()
        except LockNotAcquired as refused:
            raise self._refusal(refused.holder) from refused
        try:
            replay = self._replay(await client.aget_record(self.lock_key))
        except BaseException:
            await lock.arelease(best_effort=True)
            raise
        if replay is not None:
            await lock.arelease(best_effort=True)
            return self._began(replay)
        return self._began(IdempotencyAttempt(self, lock))

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self.attempt is not None and not self.attempt.completed:
            self.attempt.free()  # the block raised or kept nothing: the next caller runs

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self.attempt is not None and not self.attempt.completed:
            await self.attempt.afree()

    def _began(self, attempt: IdempotencyAttempt) -> IdempotencyAttempt:
        self.attempt = attempt
        return attempt

    def _replay(self, record: CompletionRecord | None) -> IdempotencyAttempt | None:
        """The attempt that replays ``record``; None when there is none (or it cannot be read: the key runs again)."""
        if record is None:
            return None
        stored = stored_result.decode(record.value)
        if stored is None or not _readable(stored):
            logger.warning("The stored result for idempotency key %r cannot be read: it runs again.", self.key)
            return None
        if stored.fingerprint != self.fingerprint:
            idempotency_answered("mismatches")
            raise IdempotencyKeyReused(
                f"Idempotency key {self.key!r} was used for other work (another fingerprint): use a new key."
            )
        idempotency_answered("replays")
        return IdempotencyAttempt(self, stored=stored)

    def _refusal(self, holder: LockInfo | None) -> Exception:
        """The error for a key whose first run is in flight: IdempotencyKeyInUse, or Reused for other work."""
        data = LockData.from_bytes(holder.data) if holder is not None else None
        theirs = data.extra.get(FINGERPRINT) if data is not None else None
        if isinstance(theirs, str) and theirs != self.fingerprint:
            idempotency_answered("mismatches")
            return IdempotencyKeyReused(
                f"Idempotency key {self.key!r} is in use for other work (another fingerprint): use a new key."
            )
        idempotency_answered("conflicts")
        retry_after = retry_seconds(holder, datetime.now(UTC))
        return IdempotencyKeyInUse(
            f"Idempotency key {self.key!r} is in use: its first run is in flight; try again in {retry_after}s.",
            holder,
            retry_after=retry_after,
        )


def idempotency(
    key: str, *, fingerprint: str = "", ttl: float = DEFAULT_TTL, purpose: str = "", user: Any = None
) -> Idempotency:
    """Do the block's work once per ``key``: ``with idempotency(key, fingerprint=...) as attempt:``.

    ``attempt.replayed`` is True when a run with this key completed within
    ``ttl`` seconds: ``attempt.result`` is its result. Otherwise the block
    holds the key (a heartbeated lease) and calls ``attempt.complete(result)``
    (JSON-serialisable or bytes). ``fingerprint`` names the work (a hash of
    its input): the key used with another raises IdempotencyKeyReused. While
    the first run is in flight, IdempotencyKeyInUse (``retry_after``).
    ``purpose`` and ``user`` are shown on the live-locks page while it runs.
    """
    return Idempotency(key, fingerprint=fingerprint, ttl=ttl, purpose=purpose, user=user)


def _serialised(result: Any) -> tuple[str, bytes]:
    if isinstance(result, bytes):
        return "bytes", result
    try:
        return "json", json.dumps(result, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError) as error:
        raise InvalidLockRequest(
            f"attempt.complete(): the result must be JSON-serialisable or bytes ({error}); convert it first."
        ) from None


def _readable(stored: StoredResult) -> bool:
    if stored.kind != "json":
        return True
    try:
        json.loads(stored.payload)
    except (ValueError, RecursionError):
        return False
    return True


def _result_of(stored: StoredResult) -> Any:
    """What ``attempt.result`` is: the JSON value, the bytes, or (for a view's response) the stored record."""
    if stored.kind == "json":
        return json.loads(stored.payload)
    if stored.kind == "bytes":
        return stored.payload
    return stored
