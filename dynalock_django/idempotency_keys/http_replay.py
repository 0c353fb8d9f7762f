"""A view's response as an idempotency key keeps it, and the answers ``@idempotent`` gives instead of the view.

Kept: the status, the body byte for byte, and the headers except the
hop-by-hop ones (RFC 9110: they describe one connection) and ``Set-Cookie``
(a session or CSRF cookie belongs to the request that got it, never to a
replay). Not kept: streaming responses, and those with status 500 or more
(their key is freed, so a retry runs). A replay carries ``Idempotent-Replayed: true``.
"""

from __future__ import annotations

from typing import Any

from django.http import BadHeaderError, HttpResponse, HttpResponseBase, JsonResponse

from .stored_result import StoredResult

HTTP_KIND = "http"
REPLAYED_HEADER = "Idempotent-Replayed"
NOT_REPLAYED = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "set-cookie",
        REPLAYED_HEADER.lower(),
    }
)


def storable(response: HttpResponseBase) -> bool:
    """Whether the response is kept for replays: not streamed, and not a server error."""
    return not response.streaming and response.status_code < 500


def kept(response: HttpResponse) -> tuple[dict[str, Any], bytes]:
    """What is stored of a (rendered, not streaming) response: ``meta`` (status, headers) and its body."""
    headers = [[name, value] for name, value in response.items() if name.lower() not in NOT_REPLAYED]
    return {"status": response.status_code, "headers": headers}, response.content


def replayed(stored: StoredResult) -> HttpResponse | None:
    """The stored response again, marked ``Idempotent-Replayed: true``; None when the record is no response of ours.

    The record comes from a shared table: a status out of range or headers
    of the wrong shape make it unreadable, and a header Django refuses (a
    line break in it) is left out.
    """
    status, headers = stored.meta.get("status"), stored.meta.get("headers")
    if stored.kind != HTTP_KIND or type(status) is not int or not 100 <= status <= 599 or not isinstance(headers, list):
        return None
    response = HttpResponse(stored.payload, status=status)
    del response["Content-Type"]
    for pair in headers:
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(part, str) for part in pair)):
            continue
        name, value = pair
        if name.lower() in NOT_REPLAYED:
            continue
        try:
            response[name] = value
        except (BadHeaderError, ValueError):
            continue
    response[REPLAYED_HEADER] = "true"
    return response


def bad_key(detail: str) -> JsonResponse:
    """400: the header is missing (``required=True``) or its value cannot be a key."""
    return JsonResponse({"error": "invalid_idempotency_key", "detail": detail}, status=400)


def in_flight(retry_after: int) -> JsonResponse:
    """409 with Retry-After: the key's first request is still running (its lease is alive)."""
    detail = "A request with this idempotency key is still being processed; retry later."
    response = JsonResponse(
        {"error": "idempotency_key_in_use", "detail": detail, "retry_after": retry_after}, status=409
    )
    response["Retry-After"] = str(retry_after)
    return response


def reused() -> JsonResponse:
    """422: the key was first used for another request (method, path, content type or body differ)."""
    detail = "This idempotency key was used for a different request; send a new key for a new request."
    return JsonResponse({"error": "idempotency_key_reused", "detail": detail}, status=422)
