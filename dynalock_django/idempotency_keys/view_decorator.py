"""``@idempotent()``: a retried POST (PUT, PATCH, DELETE) with the same ``Idempotency-Key`` is done once.

For function views, class-based views' methods (``method_decorator``) and
DRF ``APIView``/``ViewSet`` methods, sync or async. The answers (the IETF
draft's): the first request runs and its response is kept; a duplicate
while it runs is 409 with ``Retry-After``; after it, the kept response is
replayed with ``Idempotent-Replayed: true``; the same key for another
request is 422; a bad key (or none, with ``required=True``) is 400.
Responses with status 500 or more and streaming ones are not kept: the key
is freed, so a retry runs. docs/idempotency.md has the table and the costs.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import logging
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from asgiref.sync import sync_to_async
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponseBase
from django.http.request import RawPostDataException

from ..decorators import unavailable_response
from ..exceptions import DynamoDBError, DynamoDBUnavailable, IdempotencyKeyInUse, IdempotencyKeyReused, LockLost
from . import http_replay, request_key
from .attempt import DEFAULT_TTL, Idempotency, IdempotencyAttempt

V = TypeVar("V", bound=Callable[..., Any])
logger = logging.getLogger("dynalock_django.idempotency")

UNSAFE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


def idempotent(
    *,
    header: str = "Idempotency-Key",
    ttl: float = DEFAULT_TTL,
    required: bool = False,
    methods: Sequence[str] = UNSAFE_METHODS,
) -> Callable[[V], V]:
    """Decorate a view (or a view's method) so a request is done once per ``header`` key for ``ttl`` seconds.

    Requests of other ``methods`` run as if undecorated, and so do requests
    without the header unless ``required`` (then 400).
    """
    if not isinstance(header, str) or not header or not header.isascii():
        raise TypeError(f"idempotent(header={header!r}): pass the header's name, e.g. 'Idempotency-Key'.")
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 0 < ttl < math.inf:
        raise TypeError(f"idempotent(ttl={ttl!r}): pass how many seconds a response is kept, e.g. 86400.")
    if isinstance(methods, str) or not all(isinstance(method, str) for method in methods):
        raise TypeError(f"idempotent(methods={methods!r}): pass a tuple of method names, e.g. ('POST',).")
    plan = _Plan(header, float(ttl), bool(required), frozenset(method.upper() for method in methods))

    def decorate(view: V) -> V:
        if isinstance(view, type):
            raise TypeError(
                f"@idempotent() decorates a view function or a view's method, not the class {view.__name__}: "
                "use method_decorator(idempotent(), name='post') or decorate its methods."
            )
        if inspect.iscoroutinefunction(view):

            @functools.wraps(view)
            async def async_idempotent(*args: Any, **kwargs: Any) -> Any:
                request, _ = _request_of(args)
                return await plan.arun(request, lambda: view(*args, **kwargs))

            return cast(V, async_idempotent)

        @functools.wraps(view)
        def sync_idempotent(*args: Any, **kwargs: Any) -> Any:
            request, owner = _request_of(args)
            rest = args[2:] if owner is not None else args[1:]
            return plan.run(request, lambda: _finished(view(*args, **kwargs), owner, request, rest, kwargs))

        return cast(V, sync_idempotent)

    return decorate


class _Plan:
    """One decorator's settings, and what it does with a request."""

    def __init__(self, header: str, ttl: float, required: bool, methods: frozenset[str]) -> None:
        self.header = header
        self.ttl = ttl
        self.required = required
        self.methods = methods

    def run(self, request: HttpRequest, view: Callable[[], HttpResponseBase]) -> HttpResponseBase:
        early = self._first_look(request)
        if early is None:
            return view()
        if isinstance(early, HttpResponseBase):
            return early
        try:
            with self._scope(request, early, getattr(request, "user", None)) as attempt:
                if attempt.replayed:
                    return _replay(attempt)
                response = view()
                if not http_replay.storable(response):
                    attempt.free()
                    return response
                meta, body = http_replay.kept(response)  # type: ignore[arg-type]  # not streaming: storable
                try:
                    attempt.keep(http_replay.HTTP_KIND, body, meta)
                except (LockLost, DynamoDBError) as error:
                    _not_kept(request, error)
                return response
        except (IdempotencyKeyInUse, IdempotencyKeyReused, DynamoDBUnavailable) as refused:
            return _refused(request, refused)

    async def arun(self, request: HttpRequest, view: Callable[[], Any]) -> HttpResponseBase:
        early = self._first_look(request)
        if early is None:
            return cast(HttpResponseBase, await view())
        if isinstance(early, HttpResponseBase):
            return early
        auser = getattr(request, "auser", None)
        user = await auser() if auser is not None else None
        try:
            async with self._scope(request, early, user) as attempt:
                if attempt.replayed:
                    return _replay(attempt)
                response = await view()
                if getattr(response, "is_rendered", True) is False:
                    await sync_to_async(response.render)()  # a template: the ORM may be read
                if not http_replay.storable(response):
                    await attempt.afree()
                    return cast(HttpResponseBase, response)
                meta, body = http_replay.kept(response)
                try:
                    await attempt.akeep(http_replay.HTTP_KIND, body, meta)
                except (LockLost, DynamoDBError) as error:
                    _not_kept(request, error)
                return cast(HttpResponseBase, response)
        except (IdempotencyKeyInUse, IdempotencyKeyReused, DynamoDBUnavailable) as refused:
            return _refused(request, refused)

    def _first_look(self, request: HttpRequest) -> HttpResponseBase | str | None:
        """None: run as undecorated; a response: the answer (400); else the header's value, checked."""
        if (request.method or "").upper() not in self.methods:
            return None
        value = request.headers.get(self.header)
        if value is None:
            if self.required:
                return http_replay.bad_key(f"This request needs an {self.header} header (a unique value, e.g. a UUID).")
            return None
        try:
            request_key.check_header_value(value)
        except request_key.BadIdempotencyKey as bad:
            return http_replay.bad_key(str(bad))
        return value

    def _scope(self, request: HttpRequest, value: str, user: Any) -> Idempotency:
        signed_in = user if user is not None and user.is_authenticated else None
        return Idempotency(
            request_key.scoped_key(request, value, signed_in),
            fingerprint=request_key.fingerprint(request, _body(request)),
            ttl=self.ttl,
            purpose=request_key.purpose(request),
            user=signed_in,
        )


def _replay(attempt: IdempotencyAttempt) -> HttpResponseBase:
    response = http_replay.replayed(attempt.result) if attempt.stored is not None else None
    if response is None:  # the key holds something no view of ours kept: never run the view for it
        logger.warning("Idempotency key %r holds no response to replay.", attempt.stored and attempt.stored.kind)
        return http_replay.reused()
    return response


def _finished(
    response: Any, owner: Any, request: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> HttpResponseBase:
    """The response as it will be sent: a DRF Response finalized (its renderer chosen) and rendered, like a template."""
    finalize = getattr(owner, "finalize_response", None)
    if finalize is not None and getattr(response, "is_rendered", True) is False:
        response = finalize(request, response, *args, **kwargs)
    if getattr(response, "is_rendered", True) is False:
        response.render()
    return cast(HttpResponseBase, response)


def _body(request: HttpRequest) -> bytes:
    """The request's body, for its fingerprint (a multipart body read as a stream: its fields, files' names, sizes)."""
    try:
        return bytes(request.body)
    except (RawPostDataException, RequestDataTooBig):
        fields = sorted((name, values) for name, values in request.POST.lists())
        files = sorted(
            (name, file.name or "", file.size or 0) for name, uploads in request.FILES.lists() for file in uploads
        )
        return hashlib.sha256(repr((fields, files)).encode("utf-8", "surrogatepass")).digest()


def _refused(
    request: HttpRequest, refused: IdempotencyKeyInUse | IdempotencyKeyReused | DynamoDBUnavailable
) -> HttpResponseBase:
    """The answer when the view did not run: its key is in use (retry later) or reused, or DynamoDB did not answer."""
    if isinstance(refused, IdempotencyKeyInUse):
        return http_replay.in_flight(refused.retry_after)
    if isinstance(refused, IdempotencyKeyReused):
        return http_replay.reused()
    return unavailable_response(request, refused)


def _not_kept(request: HttpRequest, error: Exception) -> None:
    """The view ran and its response goes out; only its replays are lost (the next retry runs it again)."""
    logger.warning("The response of %s %s was not kept for replays: %s", request.method, request.path, error)


def _request_of(args: tuple[Any, ...]) -> tuple[Any, Any]:
    """``(request, view object)``: a function view's request comes first, a method's after its view (self).

    Told apart by ``META``, which a Django request has and DRF's Request passes on; a view object has none.
    """
    if args and hasattr(args[0], "META"):
        return args[0], None
    return args[1], args[0]
