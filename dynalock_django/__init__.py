"""Advisory locks on Django model instances, stored in DynamoDB.

The Django API is imported lazily, so ``dynalock_django.dynamodb`` stays
usable without Django settings and this package can sit in INSTALLED_APPS.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0.dev0"

# name -> module that defines it
_LAZY: dict[str, str] = {}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
