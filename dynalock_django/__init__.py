"""Advisory locks on Django model instances, stored in DynamoDB.

    from dynalock_django import lock_object, requires_lock

The Django API is imported lazily, so ``dynalock_django.dynamodb`` stays
usable without Django settings and this package can sit in INSTALLED_APPS.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ imports on first use
    from .client import get_client as get_client
    from .counted_locks import SemaphoreLock as SemaphoreLock
    from .counted_locks import semaphore as semaphore
    from .decorators import requires_lock as requires_lock
    from .exceptions import AlreadyQueued as AlreadyQueued
    from .exceptions import DynalockError as DynalockError
    from .exceptions import IdempotencyKeyInUse as IdempotencyKeyInUse
    from .exceptions import IdempotencyKeyReused as IdempotencyKeyReused
    from .exceptions import LockLost as LockLost
    from .exceptions import LockNotAcquired as LockNotAcquired
    from .exceptions import LockTimeout as LockTimeout
    from .exceptions import StaleFencingToken as StaleFencingToken
    from .exceptions import TableNotFound as TableNotFound
    from .exceptions import TaskLocked as TaskLocked
    from .exceptions import WouldDeadlock as WouldDeadlock
    from .fencing import FencingTokenField as FencingTokenField
    from .fencing import fenced_refresh as fenced_refresh
    from .fencing import fenced_save as fenced_save
    from .idempotency_keys import idempotency as idempotency
    from .idempotency_keys import idempotent as idempotent
    from .leader import Leadership as Leadership
    from .locks import KeyLock as KeyLock
    from .locks import lock_key as lock_key
    from .locks import lock_model as lock_model
    from .locks import lock_object as lock_object
    from .locks import lock_objects as lock_objects

__version__ = "0.1.0"

# name -> module that defines it
_LAZY: dict[str, str] = {
    "KeyLock": ".locks",
    "lock_object": ".locks",
    "lock_objects": ".locks",
    "lock_model": ".locks",
    "lock_key": ".locks",
    "SemaphoreLock": ".counted_locks",
    "semaphore": ".counted_locks",
    "requires_lock": ".decorators",
    "FencingTokenField": ".fencing",
    "fenced_save": ".fencing",
    "fenced_refresh": ".fencing",
    "Leadership": ".leader",
    "idempotent": ".idempotency_keys",
    "idempotency": ".idempotency_keys",
    "get_client": ".client",
    "DynalockError": ".exceptions",
    "LockNotAcquired": ".exceptions",
    "LockTimeout": ".exceptions",
    "LockLost": ".exceptions",
    "StaleFencingToken": ".exceptions",
    "TableNotFound": ".exceptions",
    "TaskLocked": ".exceptions",
    "AlreadyQueued": ".exceptions",
    "IdempotencyKeyInUse": ".exceptions",
    "IdempotencyKeyReused": ".exceptions",
    "WouldDeadlock": ".exceptions",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
