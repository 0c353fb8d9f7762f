"""A run-once task's lock key: given, computed from its arguments, or its name plus its normalized arguments.

The arguments are bound to the function's signature with defaults applied, so
``t(1)``, ``t(x=1)`` and ``t()`` (where ``x=1`` is the default) are one key;
each value is written as JSON, so a tuple and the list a queue's JSON turns it
into are one key too.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from .. import keys
from ..exceptions import ConfigurationError, InvalidLockRequest

KeySpec = str | Callable[..., str] | None

# Kept readable in a key; everything else (``,``, ``=``, ``:``, ``%``, ``#``, spaces) is percent-encoded, so a
# key holds no ``:`` and the separators between arguments cannot occur inside one.
_READABLE = "\"'[]{}!*+/;<>?@^`|"


def check_key_spec(key: KeySpec) -> None:
    if key is None or callable(key):
        return
    if not isinstance(key, str) or not key:
        raise ConfigurationError(
            f"lock_task(key=...) takes a non-empty string, a callable of the task's arguments, or None "
            f"(the task's name and arguments), not {key!r}."
        )


def dotted_name(function: Callable[..., Any]) -> str:
    return f"{function.__module__}.{function.__qualname__}"


class TaskKeys:
    """The keys of one decorated function: the lock a run holds, and the marker of a queued copy."""

    def __init__(self, function: Callable[..., Any], key: KeySpec, *, counted: bool = False) -> None:
        check_key_spec(key)
        self.name = dotted_name(function)
        self.signature = inspect.signature(function)
        self.spec = key
        self.counted = counted  # a semaphore's key (limit=N): a computed one leaves room for its permits

    def run_key(self, args: tuple[Any, ...], kwargs: dict[str, Any], *, injected: bool) -> str:
        """The key a run holds; ``injected``: ``args[0]`` is the framework's object (or a stand-in for it)."""
        return self._key(args, kwargs, injected=injected, queued=False)

    def queued_key(self, args: tuple[Any, ...], kwargs: dict[str, Any], *, injected: bool) -> str:
        """The key of the marker an enqueue holds until a worker starts the copy."""
        return self._key(args, kwargs, injected=injected, queued=True)

    def _key(self, args: tuple[Any, ...], kwargs: dict[str, Any], *, injected: bool, queued: bool) -> str:
        own_args = args[1:] if injected else args
        if isinstance(self.spec, str):
            return keys.key_for_name(f"queued {self.spec}" if queued else self.spec)
        if self.spec is not None:
            given = self.spec(*own_args, **kwargs)
            if not isinstance(given, str) or not given:
                raise InvalidLockRequest(
                    f"The key callable of {self.name} returned {given!r}: it must return a non-empty string."
                )
            return keys.key_for_name(f"queued {given}" if queued else given)
        arguments = self.encoded_arguments(args, kwargs, injected=injected)
        return keys.key_for_task(self.name, arguments, queued=queued, counted=self.counted and not queued)

    def encoded_arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any], *, injected: bool) -> str:
        """``name=value,...`` in the signature's order, defaults applied, each value as JSON, percent-encoded."""
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as error:
            raise InvalidLockRequest(f"{self.name} cannot be called with these arguments: {error}") from error
        bound.apply_defaults()
        items = list(bound.arguments.items())[1:] if injected else bound.arguments.items()
        return ",".join(
            f"{quote(name, safe='')}={quote(self._json(name, value), safe=_READABLE)}" for name, value in items
        )

    def _json(self, name: str, value: Any) -> str:
        try:
            return json.dumps(value, sort_keys=True, separators=(",", ":"))
        except (TypeError, ValueError) as error:
            raise InvalidLockRequest(
                f"{self.name}'s argument {name!r} ({type(value).__name__}) is not JSON, so it cannot be part of the "
                f"task's lock key: pass lock_task(key=...), a string or a callable of the task's arguments."
            ) from error
