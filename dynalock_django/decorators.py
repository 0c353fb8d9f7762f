"""``@requires_lock(Model)``: hold the lock of the URL's object for the whole view.

A missing object is a 404. ``check(request, obj)``, when given, runs before
the lock is taken: False (or ``PermissionDenied``) answers 403 and takes no
lock, so a user the view refuses cannot keep the object from those it
serves. On contention the view does not run: the response is
``CONTENTION_STATUS`` (423 Locked by default, :mod:`.contention`) with
``Retry-After`` and who holds the lock to those who may know. The lease is on
``request.lock_lease``. When DynamoDB does not answer, the response is 503
with ``Retry-After`` (the circuit breaker's cool-down when it is open), not a
500.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Collection
from typing import Any, TypeVar, cast

from asgiref.sync import sync_to_async
from django.core.exceptions import PermissionDenied
from django.db import models
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.views import View

from .contention import locked_response, wants_json
from .exceptions import DynamoDBUnavailable, LockNotAcquired
from .locks import KeyLock, lock_object
from .sensitive_fields import Sensitive, declared, declared_by, union

V = TypeVar("V", bound=Callable[..., Any])
# Whether the request may use the object: asked before its lock is taken.
Check = Callable[[HttpRequest, Any], bool]

# Retry-After of a 503 when DynamoDB failed without the circuit breaker saying when to come back.
UNAVAILABLE_RETRY_AFTER = 5


def requires_lock(
    model: type[models.Model],
    *,
    lookup: str = "pk",
    url_kwarg: str | None = None,
    timeout: float = 0.0,
    purpose: str = "",
    status: int | None = None,
    check: Check | None = None,
    reentrant: bool = False,
    sensitive: bool | Collection[str] = (),
) -> Callable[[V], V]:
    """Decorate a function view, or a class-based view (its ``dispatch``), sync or async.

    ``lookup`` is the model field matched against URL kwarg ``url_kwarg``
    (default: the same name, and ``pk`` also accepts ``object_id``). The view
    waits up to ``timeout`` seconds for the lock before answering 423.
    ``check(request, obj)`` is the view's access check, made before the lock
    is taken (a plain function, run in a thread for async views): False or
    ``PermissionDenied`` answers 403, and no lock is taken. ``reentrant=True``:
    a view called by code already holding the object's lock in the same thread
    or task shares that hold (see ``lock_object``); without it, such a call is
    refused at once (WouldDeadlock, a ``LockTimeout``: 423). ``sensitive``: the
    fields of a POST the 423 page must not offer to send again (True: none is
    offered), besides secret-looking names and the view's
    ``sensitive_post_parameters``, above or below this decorator.
    """
    if check is not None and (not callable(check) or inspect.iscoroutinefunction(check)):
        raise TypeError(
            f"requires_lock: check= must be a plain function check(request, obj) -> bool, not {check!r}; "
            "it runs in a thread for async views, so it may use the ORM."
        )
    marked = declared(sensitive)

    def lock_for(request: HttpRequest, kwargs: dict[str, Any]) -> tuple[KeyLock, models.Model]:
        value = _url_value(kwargs, url_kwarg or lookup)
        instance = get_object_or_404(model, **{lookup: value})
        if check is not None and not check(request, instance):
            raise PermissionDenied  # before the lock: a refused user keeps nobody out
        user = request.user if getattr(request, "user", None) and request.user.is_authenticated else None
        lock = lock_object(
            instance,
            timeout=timeout,
            blocking=timeout > 0,
            purpose=purpose or request.path,
            user=user,
            reentrant=reentrant,
        )
        return lock, instance

    def decorate(view: V) -> V:
        if isinstance(view, type) and issubclass(view, View):
            # The handlers' own sensitive_post_parameters (method_decorator on post) run after dispatch.
            handlers = [getattr(view, method) for method in view.http_method_names if hasattr(view, method)]
            marks = union(marked, *map(declared_by, handlers))
            view.dispatch = decorated(view.dispatch, marks)  # type: ignore[method-assign]
            return cast(V, view)
        return decorated(view, marked)

    def decorated(view: V, marks: Sensitive) -> V:
        # With a sensitive_post_parameters below this decorator, it has not run when the lock is refused.
        sensitive = union(marks, declared_by(view))
        bound = _is_method(view)
        if inspect.iscoroutinefunction(view):

            @functools.wraps(view)
            async def async_locked(*args: Any, **kwargs: Any) -> Any:
                request = args[1] if bound else args[0]
                lock, instance = await sync_to_async(lock_for)(request, kwargs)
                try:
                    async with lock as lease:
                        request.lock_lease = lease
                        return await view(*args, **kwargs)
                except LockNotAcquired as refused:  # who may be told reads permissions: the ORM, in a thread
                    return await sync_to_async(locked_response)(
                        request, refused.holder, status, instance=instance, sensitive=sensitive
                    )
                except DynamoDBUnavailable as unavailable:
                    return unavailable_response(request, unavailable)

            return cast(V, async_locked)

        @functools.wraps(view)
        def locked(*args: Any, **kwargs: Any) -> Any:
            request = args[1] if bound else args[0]
            lock, instance = lock_for(request, kwargs)
            try:
                with lock as lease:
                    request.lock_lease = lease
                    return view(*args, **kwargs)
            except LockNotAcquired as refused:
                return locked_response(request, refused.holder, status, instance=instance, sensitive=sensitive)
            except DynamoDBUnavailable as unavailable:
                return unavailable_response(request, unavailable)

        return cast(V, locked)

    return decorate


def unavailable_response(request: HttpRequest, error: DynamoDBUnavailable) -> HttpResponse:
    """503 Service Unavailable, with ``Retry-After``: the lock service did not answer (not a 500)."""
    retry_after = max(1, math.ceil(getattr(error, "retry_after", UNAVAILABLE_RETRY_AFTER)))
    message = "The lock service is not answering. Try again in a minute."
    response: HttpResponse
    if wants_json(request):
        response = JsonResponse({"error": "unavailable", "retry_after": retry_after}, status=503)
    else:
        response = HttpResponse(message, status=503, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(retry_after)
    return response


def _url_value(kwargs: dict[str, Any], name: str) -> Any:
    if name in kwargs:
        return kwargs[name]
    if name == "pk" and "object_id" in kwargs:  # the admin's name for it
        return kwargs["object_id"]
    raise TypeError(f"requires_lock: the URL has no {name!r} argument (it has {sorted(kwargs)}); pass url_kwarg=.")


def _is_method(view: Callable[..., Any]) -> bool:
    parameters = list(inspect.signature(view).parameters)
    return bool(parameters) and parameters[0] == "self"
