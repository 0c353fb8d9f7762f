"""What identifies a request with an ``Idempotency-Key``: its scoped key, its fingerprint, and its purpose.

The key is the header's value scoped by who sent it (the authenticated
user, else the session, else "anonymous": such clients must send keys
nobody can guess, as the IETF draft asks), the method and the path; it is
hashed (SHA-256), so the header's text never reaches the table. The
fingerprint hashes what the request asks for: method, path, content type
and body; the same key with another fingerprint is refused (422).
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.http import HttpRequest

MAX_KEY_LENGTH = 255
"""The longest ``Idempotency-Key`` accepted (characters); a longer one is answered 400."""


class BadIdempotencyKey(ValueError):
    """The header's value cannot be a key; the message says why, for the 400's body."""


def check_header_value(value: str) -> None:
    """A key is 1 to MAX_KEY_LENGTH printable ASCII characters (a UUID, usually); BadIdempotencyKey otherwise."""
    if not value:
        raise BadIdempotencyKey("The idempotency key is empty: send a unique value, such as a UUID.")
    if len(value) > MAX_KEY_LENGTH:
        raise BadIdempotencyKey(f"The idempotency key is {len(value)} characters long; at most {MAX_KEY_LENGTH}.")
    if not all(" " <= character <= "~" for character in value):
        raise BadIdempotencyKey("The idempotency key must be printable ASCII characters only, such as a UUID.")


def scoped_key(request: HttpRequest, value: str, user: Any) -> str:
    """The key's name in the table: a hash of who sent it, the method, the path and the header's value."""
    if user is not None and user.is_authenticated:
        sender = f"user:{user.pk}"
    else:
        session = getattr(request, "session", None)
        session_key = getattr(session, "session_key", None)
        sender = f"session:{session_key}" if session_key else "anonymous"
    return _digest(sender, request.method or "", request.path, value)


def fingerprint(request: HttpRequest, body: bytes) -> str:
    """What the request asks for: its method, path, content type and body (hashed)."""
    return _digest(request.method or "", request.path, request.content_type or "", hashlib.sha256(body).hexdigest())


def purpose(request: HttpRequest) -> str:
    """How the live-locks page says what the key's first request is doing: ``idempotent POST /path``."""
    return f"idempotent {request.method} {request.path}"


def _digest(*parts: str) -> str:
    # Length-prefixed, so no two different lists of parts hash alike.
    joined = "".join(f"{len(part)}:{part}" for part in parts)
    return hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()
