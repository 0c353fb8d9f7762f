"""``@requires_lock(Model)``: hold the lock of the URL's object for the whole view.

On contention the view does not run: the response is ``CONTENTION_STATUS``
(423 Locked by default) with ``Retry-After`` and who holds the lock, as JSON
for JSON clients and from the ``dynalock_django/locked.html`` template
otherwise. Who holds it (a user, or a host and process) and for what are told
to logged-in users only, unless ``SHOW_HOLDER_TO_ANONYMOUS``. A missing object
is a 404. The lease is on ``request.lock_lease``. When DynamoDB does not
answer, the response is 503 with ``Retry-After`` (the circuit breaker's
cool-down when it is open), not a 500.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import Any, TypeVar, cast

from asgiref.sync import sync_to_async
from django.db import models
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.views import View

from .conf import dynalock_settings
from .dynamodb import LockInfo
from .exceptions import DynamoDBUnavailable, LockNotAcquired
from .locks import KeyLock, lock_object
from .payload import LockData

V = TypeVar("V", bound=Callable[..., Any])

# A day: an item can claim a lease of millions of years, and no client should be told to wait that long.
MAX_RETRY_AFTER = 24 * 3600
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
) -> Callable[[V], V]:
    """Decorate a function view, or a class-based view (its ``dispatch``), sync or async.

    ``lookup`` is the model field matched against URL kwarg ``url_kwarg``
    (default: the same name, and ``pk`` also accepts ``object_id``). The view
    waits up to ``timeout`` seconds for the lock before answering 423.
    """

    def lock_for(request: HttpRequest, kwargs: dict[str, Any]) -> KeyLock:
        value = _url_value(kwargs, url_kwarg or lookup)
        instance = get_object_or_404(model, **{lookup: value})
        user = request.user if getattr(request, "user", None) and request.user.is_authenticated else None
        return lock_object(instance, timeout=timeout, blocking=timeout > 0, purpose=purpose or request.path, user=user)

    def decorate(view: V) -> V:
        if isinstance(view, type) and issubclass(view, View):
            view.dispatch = decorate(view.dispatch)  # type: ignore[method-assign]
            return cast(V, view)
        bound = _is_method(view)
        if inspect.iscoroutinefunction(view):

            @functools.wraps(view)
            async def async_locked(*args: Any, **kwargs: Any) -> Any:
                request = args[1] if bound else args[0]
                lock = await sync_to_async(lock_for)(request, kwargs)
                try:
                    async with lock as lease:
                        request.lock_lease = lease
                        return await view(*args, **kwargs)
                except LockNotAcquired as refused:
                    return locked_response(request, refused.holder, status)
                except DynamoDBUnavailable as unavailable:
                    return unavailable_response(request, unavailable)

            return cast(V, async_locked)

        @functools.wraps(view)
        def locked(*args: Any, **kwargs: Any) -> Any:
            request = args[1] if bound else args[0]
            lock = lock_for(request, kwargs)
            try:
                with lock as lease:
                    request.lock_lease = lease
                    return view(*args, **kwargs)
            except LockNotAcquired as refused:
                return locked_response(request, refused.holder, status)
            except DynamoDBUnavailable as unavailable:
                return unavailable_response(request, unavailable)

        return cast(V, locked)

    return decorate


def locked_response(request: HttpRequest, holder: LockInfo | None, status: int | None = None) -> HttpResponse:
    """The answer to a request for a locked object: who holds it (to those who may know) and when to retry."""
    data = LockData.from_bytes(holder.data) if holder else None
    retry_after = min(math.ceil(holder.lease_duration), MAX_RETRY_AFTER) if holder else 1
    user = getattr(request, "user", None)
    disclose = dynalock_settings.SHOW_HOLDER_TO_ANONYMOUS or bool(user and user.is_authenticated)
    context = {
        "holder": (data.holder if data else (holder.owner_name if holder else None)) if disclose else None,
        "purpose": (data.purpose if data else "") if disclose else "",
        "since": holder.acquired_at.isoformat() if holder and holder.acquired_at else None,
        "retry_after": retry_after,
    }
    response: HttpResponse
    status = status or dynalock_settings.CONTENTION_STATUS
    if _wants_json(request):
        response = JsonResponse({"error": "locked", **context}, status=status)
    else:
        response = TemplateResponse(request, "dynalock_django/locked.html", context, status=status)
    response["Retry-After"] = str(retry_after)
    return response


def unavailable_response(request: HttpRequest, error: DynamoDBUnavailable) -> HttpResponse:
    """503 Service Unavailable, with ``Retry-After``: the lock service did not answer (not a 500)."""
    retry_after = max(1, math.ceil(getattr(error, "retry_after", UNAVAILABLE_RETRY_AFTER)))
    message = "The lock service is not answering. Try again in a minute."
    response: HttpResponse
    if _wants_json(request):
        response = JsonResponse({"error": "unavailable", "retry_after": retry_after}, status=503)
    else:
        response = HttpResponse(message, status=503, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(retry_after)
    return response


def _wants_json(request: HttpRequest) -> bool:
    accept = request.headers.get("Accept", "")
    return request.content_type == "application/json" or ("application/json" in accept and "text/html" not in accept)


def _url_value(kwargs: dict[str, Any], name: str) -> Any:
    if name in kwargs:
        return kwargs[name]
    if name == "pk" and "object_id" in kwargs:  # the admin's name for it
        return kwargs["object_id"]
    raise TypeError(f"requires_lock: the URL has no {name!r} argument (it has {sorted(kwargs)}); pass url_kwarg=.")


def _is_method(view: Callable[..., Any]) -> bool:
    parameters = list(inspect.signature(view).parameters)
    return bool(parameters) and parameters[0] == "self"
