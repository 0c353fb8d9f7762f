"""What a completed idempotency key keeps: its fingerprint, the kind of result, and the result, compressed.

The value stored beside the key's lock (``LockClient.complete``) is zlib of
one JSON line (``{"dynalock": 1, "fingerprint": ..., "kind": ..., "meta": {...}}``)
followed by the result's bytes (a response's body, a JSON document, raw
bytes). The table is shared and may be written by hand: :func:`decode`
survives any value, reads at most :data:`MAX_EXPANDED_BYTES` of it
(no zip bomb), and answers None for what it does not recognise.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Any

_MARKER = "dynalock"
_VERSION = 1
MAX_STORED_BYTES = 350 * 1024
"""The largest compressed result kept: DynamoDB's items hold at most 400 KB, the record's own attributes included."""
MAX_EXPANDED_BYTES = 16 * 1024 * 1024
# A JSON header longer than this is no header of ours.
_MAX_HEADER_BYTES = 64 * 1024


@dataclass(frozen=True)
class StoredResult:
    """A decoded record: whose it was (``fingerprint``), what it holds (``kind``, ``meta``) and the bytes."""

    fingerprint: str
    kind: str
    meta: dict[str, Any]
    payload: bytes


def encode(fingerprint: str, kind: str, payload: bytes, meta: dict[str, Any] | None = None) -> bytes:
    header = {_MARKER: _VERSION, "fingerprint": fingerprint, "kind": kind, "meta": meta or {}}
    return zlib.compress(json.dumps(header, separators=(",", ":")).encode() + b"\n" + payload)


def decode(value: bytes) -> StoredResult | None:
    """The result in ``value``, or None: not zlib, larger than MAX_EXPANDED_BYTES, or not our format."""
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(value, MAX_EXPANDED_BYTES)
    except zlib.error:
        return None
    if inflater.unconsumed_tail or not inflater.eof:
        return None  # larger than we read, or cut short
    line, newline, payload = raw.partition(b"\n")
    if not newline or len(line) > _MAX_HEADER_BYTES:
        return None
    try:
        header = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(header, dict) or header.get(_MARKER) != _VERSION:
        return None
    fingerprint, kind, meta = header.get("fingerprint"), header.get("kind"), header.get("meta")
    if not isinstance(fingerprint, str) or not isinstance(kind, str) or not isinstance(meta, dict):
        return None
    return StoredResult(fingerprint, kind, meta, payload)
