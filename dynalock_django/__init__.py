"""Advisory locks on Django model instances, stored in DynamoDB.

    from dynalock_django import lock_object, requires_lock

The Django API is imported lazily, so ``dynalock_django.dynamodb`` stays
usable without Django settings and this package can sit in INSTALLED_APPS.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0.dev0"

# name -> module that defines it
_LAZY: dict[str, str] = {
    "Lock": ".locks",
    "lock_object": ".locks",
    "lock_model": ".locks",
    "lock_key": ".locks",
    "alock_object": ".locks",
    "alock_model": ".locks",
    "alock_key": ".locks",
    "requires_lock": ".decorators",
    "FencingTokenField": ".fencing",
    "fenced_save": ".fencing",
    "fenced_refresh": ".fencing",
    "Leadership": ".leader",
    "get_client": ".client",
    "DynalockError": ".exceptions",
    "LockNotAcquired": ".exceptions",
    "LockTimeout": ".exceptions",
    "LockLost": ".exceptions",
    "StaleFencingToken": ".exceptions",
    "TableNotFound": ".exceptions",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
