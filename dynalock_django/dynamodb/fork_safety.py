"""Fork safety: in a forked child, each registered object resets what must not be shared with its parent.

A child (gunicorn ``--preload``, multiprocessing's fork) inherits the parent's
memory but not its threads: locks may be held by threads that do not exist
there, and the parent's leases, heartbeat and connections are the parent's.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_resets: weakref.WeakKeyDictionary[Any, Callable[[Any], None]] = weakref.WeakKeyDictionary()


def reset_in_forked_child(owner: T, reset: Callable[[T], None]) -> None:
    """Call ``reset(owner)`` in every child forked while ``owner`` is alive and registered."""
    _resets[owner] = reset


def forget(owner: object) -> None:
    _resets.pop(owner, None)


def _reset_all() -> None:
    for owner, reset in list(_resets.items()):
        reset(owner)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_all)
