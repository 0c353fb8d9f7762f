"""What a Django lock says about its holder, stored as JSON in the item's ``data``.

Foreign items (written by the Java client or by hand) hold anything there:
``LockData.from_bytes`` returns None for what it does not recognise.

Text in it is always valid Unicode, both ways: JSON may spell a lone
surrogate (``"\\ud800"``, from a JSON request body passed on as a purpose, or
written by hand), which no page can encode as UTF-8 (a 500 on every page that
shows it). Each one becomes U+FFFD, the replacement character, when a
``LockData`` is made, so it is neither written nor read back; invalid UTF-8
bytes read as U+FFFD too.
"""

from __future__ import annotations

import json
import math
import os
import re
import socket
from dataclasses import asdict, dataclass, field
from typing import Any

_MARKER = "dynalock"
_VERSION = 1
# A surrogate code point that JSON decoding left alone: paired ones were joined into one character already.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"
# Deeper ``extra`` is refused when made and read as a foreign payload: no holder needs it, and a hostile
# item nested a thousand deep would otherwise exhaust the stack of every page that reads it (a 500).
MAX_NESTING = 32


@dataclass(frozen=True)
class LockData:
    purpose: str = ""
    user_id: str | None = None
    username: str | None = None
    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)
    tab: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Repaired when made, so that neither a writer nor a reader ever holds text no page can encode.
        for name in ("purpose", "user_id", "username", "host", "tab", "extra"):
            object.__setattr__(self, name, repaired(getattr(self, name)))

    def to_bytes(self) -> bytes:
        return json.dumps({_MARKER: _VERSION, **asdict(self)}, separators=(",", ":"), sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, raw: bytes | None) -> LockData | None:
        if not raw:
            return None
        try:
            # Infinity, NaN and numbers past a float's range (1e400) read as null: nothing downstream
            # can use them, and int(inf) would raise OverflowError in every page and command that reads it.
            decoded = json.loads(_text(raw), parse_constant=_nothing, parse_float=_finite_or_none)
        except (ValueError, RecursionError):
            return None
        if not isinstance(decoded, dict) or decoded.get(_MARKER) != _VERSION:
            return None
        try:
            return cls(
                purpose=str(decoded.get("purpose") or ""),
                user_id=_optional_str(decoded.get("user_id")),
                username=_optional_str(decoded.get("username")),
                host=str(decoded.get("host") or ""),
                pid=int(decoded.get("pid") or 0),
                tab=_optional_str(decoded.get("tab")),
                extra=dict(decoded.get("extra") or {}),
            )
        except (TypeError, ValueError):
            return None

    @property
    def holder(self) -> str:
        """Who holds it, for people: the user, or the host and process of code."""
        return self.username or f"{self.host} (pid {self.pid})"


def repaired(value: Any, depth: int = 0) -> Any:
    """``value`` with every lone surrogate in its text (in lists and dicts too, keys included) made U+FFFD.

    ValueError for lists and dicts nested deeper than :data:`MAX_NESTING`.
    """
    if isinstance(value, str):
        return _LONE_SURROGATE.sub(REPLACEMENT, value)
    if isinstance(value, dict | list | tuple) and depth >= MAX_NESTING:
        raise ValueError(f"Lock data nested deeper than {MAX_NESTING} levels: keep `extra` flat (a few plain values).")
    if isinstance(value, dict):
        return {repaired(key, depth + 1): repaired(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [repaired(item, depth + 1) for item in value]
    return value


def _text(raw: bytes) -> str | bytes:
    """The payload as JSON reads it: its own encoding detection first, else UTF-8 with invalid bytes as U+FFFD."""
    try:
        return raw.decode(json.detect_encoding(raw))
    except (UnicodeDecodeError, LookupError):
        return raw.decode("utf-8", errors="replace")


def _nothing(_: str) -> None:
    return None


def _finite_or_none(text: str) -> float | None:
    number = float(text)
    return number if math.isfinite(number) else None


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)
