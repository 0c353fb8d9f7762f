"""Which fields of a POST the 423 page must not echo back: Django's ``sensitive_post_parameters``, and more.

The page offers to send a refused form again, its fields in hidden inputs: a
page a browser may cache, a screen seen over a shoulder. A field is left out
(typed again instead) when its name looks secret, when the request says so
(``request.sensitive_post_parameters``, set by Django's decorator when it ran
first), or when the view says so: ``@requires_lock(..., sensitive=[...])``,
or a ``sensitive_post_parameters`` below ``@requires_lock``, which has not run
when the lock is refused, so it is read from the view itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator
from typing import Any, Literal

ALL: Literal["__ALL__"] = "__ALL__"
"""Every field is sensitive: Django's own value of ``request.sensitive_post_parameters`` for it."""

Sensitive = frozenset[str] | Literal["__ALL__"]

# Names that look secret, whatever the view declares. A plain field caught by mistake is only typed again.
SECRET_NAME = re.compile(
    r"pass|secret|token|otp|pin$|cvc|cvv|card|iban|ssn|key|private|recovery|answer|security|credential"
    r"|signature|seed|mnemonic|salt|cookie|session|passport|tax",
    re.IGNORECASE,
)
# How much of a view's decorators to look through (functions and the lists holding them): far more than any has.
MAX_VISITS = 1000


def declared(value: bool | Collection[str]) -> Sensitive:
    """``requires_lock``'s ``sensitive=``: True for every field, else the names of the fields."""
    if value is True:
        return ALL
    if value is False:
        return frozenset()
    if isinstance(value, str) or not all(isinstance(name, str) for name in value):
        raise TypeError(
            f"requires_lock: sensitive= takes the names of the fields the 423 page must not echo, as a list "
            f"(sensitive=['api_key']), or True for every field; not {value!r}."
        )
    return frozenset(value)


def declared_by(view: Callable[..., Any]) -> Sensitive:
    """The fields Django's ``sensitive_post_parameters`` marks anywhere among ``view``'s decorators.

    Read from the decorators' closures (``parameters``), through ``functools.wraps``' ``__wrapped__``
    and ``method_decorator``'s list of decorators: a decorator below ``requires_lock`` has not run
    when the lock is refused.
    """
    found: set[str] = set()
    for function in _functions_behind(view):
        # Its code's name: functools.wraps gave the wrapper the view's __qualname__.
        if not function.__code__.co_qualname.startswith("sensitive_post_parameters."):
            continue
        parameters = _closure(function).get("parameters")
        if isinstance(parameters, tuple):
            if not parameters:
                return ALL
            found.update(name for name in parameters if isinstance(name, str))
    return frozenset(found)


def union(*marks: Collection[str] | None) -> Sensitive:
    """Every field any of ``marks`` makes sensitive (a mark of None marks none)."""
    names: set[str] = set()
    for mark in marks:
        if mark == ALL:
            return ALL
        if mark:
            names.update(mark)
    return frozenset(names)


def echoable(name: str, sensitive: Sensitive) -> bool:
    """Whether a field may be echoed into the page."""
    return sensitive != ALL and name not in sensitive and not SECRET_NAME.search(name)


def _functions_behind(view: Callable[..., Any]) -> Iterator[Any]:
    """``view`` and every function its decorators keep: wrapped views, closed-over decorators."""
    seen: set[int] = set()
    pending: list[Any] = [view]
    for _ in range(MAX_VISITS):
        if not pending:
            return
        item = pending.pop()
        if isinstance(item, list | tuple):
            pending.extend(item)
            continue
        function = getattr(item, "__func__", item)  # a bound method's function
        if not hasattr(function, "__code__") or id(function) in seen:
            continue
        seen.add(id(function))
        yield function
        pending.extend(_closure(function).values())
        if hasattr(function, "__wrapped__"):
            pending.append(function.__wrapped__)


def _closure(function: Any) -> dict[str, Any]:
    """The variables ``function`` closes over, by name (a cell not yet filled left out)."""
    variables: dict[str, Any] = {}
    for name, cell in zip(function.__code__.co_freevars, function.__closure__ or (), strict=False):
        try:
            variables[name] = cell.cell_contents
        except ValueError:
            continue
    return variables
