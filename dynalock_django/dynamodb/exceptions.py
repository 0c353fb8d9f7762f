"""Errors raised by the lock protocol.

The Django layer re-exports this tree from :mod:`dynalock_django.exceptions`,
adding its own branches; that module's docstring draws the whole tree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .wire.item import LockInfo


class DynalockError(Exception):
    """Root of every error this library raises on purpose."""


class ConfigurationError(DynalockError, ValueError):
    """A client option or setting is invalid; the message names the fix."""


class InvalidLockRequest(DynalockError, ValueError):
    """One call's arguments cannot make a valid lock (empty key, oversized data...)."""


class CountInUse(InvalidLockRequest):
    """A counted lock asked for with another count than the one its holders hold (``.holder``: one of them).

    Refused while an item of the other count is held; a new count takes over once none is.
    """

    def __init__(self, message: str, holder: LockInfo | None = None) -> None:
        super().__init__(message)
        self.holder = holder


class LockNotAcquired(DynalockError):
    """The lock is held by someone else.

    ``holder`` is the item that stood in the way, as last read, when known;
    ``holders`` every one that did (``acquire_many``: one per key still held).
    """

    def __init__(
        self, message: str, holder: LockInfo | None = None, *, holders: Sequence[LockInfo | None] = ()
    ) -> None:
        super().__init__(message)
        self.holder = holder
        self.holders = list(holders) or ([holder] if holder is not None else [])


class LockTimeout(LockNotAcquired):
    """``acquire`` waited for its whole timeout and the lock stayed held."""


class WouldDeadlock(LockTimeout):
    """The calling context already holds the lock through this client: waiting for it would wait for itself.

    Raised at once, without a request; pass ``reentrant=True`` to share the hold instead. Also raised
    for a readers-writer lock's writer asked for by a context holding one of its readers, or a reader
    by its writer (not upgraded or downgraded: release the one first). A LockTimeout,
    which such a call raised after waiting out its timeout before, so code handling that handles this;
    ``holder``/``holders``: the context's own holding.
    """


class LockLost(DynalockError):
    """A lease we held is no longer ours.

    ``current`` is the item that replaced ours (another holder, a forced
    release), or None when it was deleted or could not be read.
    """

    def __init__(self, message: str, current: LockInfo | None = None) -> None:
        super().__init__(message)
        self.current = current


class ClientClosed(DynalockError):
    """The LockClient was closed; build a new one."""


class DynamoDBError(DynalockError):
    """DynamoDB refused a request for a reason that is not ours to interpret.

    The botocore exception is attached as ``original`` (and as ``__cause__``).
    """

    def __init__(self, message: str, original: BaseException | None = None) -> None:
        super().__init__(message)
        self.original = original


class DynamoDBUnavailable(DynamoDBError):
    """DynamoDB kept answering with throttling, server errors or time-outs."""


class CircuitOpen(DynamoDBUnavailable):
    """DynamoDB did not answer the last calls: this one failed at once, without a request.

    ``retry_after``: seconds until the client's circuit breaker lets a call probe DynamoDB again;
    ``original``: the botocore error of the last call that got no answer.
    """

    def __init__(self, message: str, original: BaseException | None, *, retry_after: float) -> None:
        super().__init__(message, original)
        self.retry_after = retry_after


class TableNotFound(DynamoDBError):
    """The lock table does not exist (or is not visible with these credentials)."""


class TableSchemaError(DynamoDBError):
    """The lock table exists, but its key schema does not match the client's."""


class TableNotReady(DynamoDBError, TimeoutError):
    """The table or its live-locks index was not ACTIVE by the caller's timeout; DynamoDB goes on building it."""
