"""Every error dynalock-django raises on purpose, rooted at DynalockError::

    DynalockError
    ├── ConfigurationError       a setting or option is invalid (the message names the fix)
    ├── InvalidLockRequest       unsaved instance, not a model, bad key or data
    │   └── CountInUse           a counted lock's other count is held (.holder); it takes over once none is
    ├── LockNotAcquired          .holder: the lock item in the way (LockInfo)
    │   ├── LockTimeout
    │   │   ├── TaskLocked       a run-once task met a live holder (on_conflict="raise", or "wait" timed out)
    │   │   └── WouldDeadlock    the calling thread or task holds the key (or the row's reader/writer), at once
    │   ├── AlreadyQueued        enqueue_unique(): a copy with the same key is still queued
    │   └── IdempotencyKeyInUse  idempotency(): the key's first run is still in flight (.retry_after)
    ├── IdempotencyKeyReused     idempotency(): the key was used with another fingerprint
    ├── LockLost                 .current: what replaced our lock, when known
    ├── StaleFencingToken        a fenced write lost to a newer holder's write; nothing changed
    ├── ClientClosed
    └── DynamoDBError            .original: the botocore error
        ├── DynamoDBUnavailable  throttling, 5xx, time-outs, network errors that outlasted the retries
        │   └── CircuitOpen      failed at once: DynamoDB did not answer the last calls (.retry_after)
        ├── TableNotFound        run ``manage.py dynalock createtable``
        ├── TableNotReady        not ACTIVE by the caller's timeout (createtable, createindex): DynamoDB goes on
        └── TableSchemaError

Errors raised inside a ``with lock_object(...)`` block are never swallowed.
"""

from __future__ import annotations

from .dynamodb import (
    CircuitOpen,
    ClientClosed,
    ConfigurationError,
    CountInUse,
    DynalockError,
    DynamoDBError,
    DynamoDBUnavailable,
    InvalidLockRequest,
    LockInfo,
    LockLost,
    LockNotAcquired,
    LockTimeout,
    TableNotFound,
    TableNotReady,
    TableSchemaError,
    WouldDeadlock,
)


class StaleFencingToken(DynalockError):
    """The row was written under a newer lease than ours: our write was refused and nothing changed."""

    def __init__(self, message: str, *, token: int, stored_token: int | None) -> None:
        super().__init__(message)
        self.token = token
        self.stored_token = stored_token


class TaskLocked(LockTimeout):
    """A task decorated with ``lock_task`` did not run: another live run holds its key (``.holder``)."""


class AlreadyQueued(LockNotAcquired):
    """``enqueue_unique`` refused: a copy of the task with the same key is queued and not yet started."""


class IdempotencyKeyInUse(LockNotAcquired):
    """``idempotency()``: the first run with this key is still in flight (its holder renews it); try again later.

    ``retry_after``: whole seconds until its lease runs out if it stops renewing (at least 1).
    """

    def __init__(self, message: str, holder: LockInfo | None, *, retry_after: int) -> None:
        super().__init__(message, holder)
        self.retry_after = retry_after


class IdempotencyKeyReused(DynalockError):
    """``idempotency()``: the key was first used for other work (another fingerprint): nothing ran, nothing replayed."""


__all__ = [
    "AlreadyQueued",
    "CircuitOpen",
    "ClientClosed",
    "ConfigurationError",
    "CountInUse",
    "DynalockError",
    "DynamoDBError",
    "DynamoDBUnavailable",
    "IdempotencyKeyInUse",
    "IdempotencyKeyReused",
    "InvalidLockRequest",
    "LockLost",
    "LockNotAcquired",
    "LockTimeout",
    "StaleFencingToken",
    "TableNotFound",
    "TableNotReady",
    "TableSchemaError",
    "TaskLocked",
    "WouldDeadlock",
]
