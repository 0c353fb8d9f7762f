"""Opaque scan cursors: DynamoDB's LastEvaluatedKey (of the table or of the live-locks index), safe in a URL."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from ..exceptions import InvalidLockRequest


def encode_cursor(last_evaluated_key: Any) -> str:
    text = json.dumps(last_evaluated_key, sort_keys=True, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, *key_names: set[str]) -> dict[str, Any]:
    """The ExclusiveStartKey in ``cursor``, naming one of the ``key_names`` sets; InvalidLockRequest if not ours."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        key = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        key = None
    valid = (
        isinstance(key, dict)
        and set(key) in key_names
        and all(isinstance(v, dict) and set(v) == {"S"} and isinstance(v["S"], str) for v in key.values())
    )
    if not valid:
        raise InvalidLockRequest(f"Invalid scan cursor {cursor[:40]!r}: start again without a cursor.")
    return dict(key)
