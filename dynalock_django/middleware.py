"""``LockErrorsMiddleware`` (opt-in): a view's lock errors as HTTP answers, not 500s.

For views that call ``lock_object``/``lock_key`` themselves (``@requires_lock``
answers on its own): ``LockTimeout`` becomes ``CONTENTION_STATUS`` (423 Locked
by default) with ``Retry-After`` and who holds the lock, as ``@requires_lock``
answers; ``DynamoDBUnavailable`` (CircuitOpen included) becomes 503 with
``Retry-After``. Add ``"dynalock_django.middleware.LockErrorsMiddleware"``
to ``MIDDLEWARE``. Any other exception passes through untouched. A release
DynamoDB does not answer after the view's block succeeded is never raised (the
rule of docs/guarantees.md), so the view's own response is the answer, not a 503.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.utils.deprecation import MiddlewareMixin

from .contention import locked_response
from .decorators import unavailable_response
from .exceptions import DynamoDBUnavailable, LockTimeout

__all__ = ["LockErrorsMiddleware"]


class LockErrorsMiddleware(MiddlewareMixin):
    """Sync and async alike (MiddlewareMixin); Django calls :meth:`process_exception` for a view's exception."""

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, LockTimeout):
            return locked_response(request, exception.holder)
        if isinstance(exception, DynamoDBUnavailable):
            return unavailable_response(request, exception)
        return None
