"""What a Django lock says about its holder, stored as JSON in the item's ``data``.

Foreign items (written by the Java client or by hand) hold anything there:
``LockData.from_bytes`` returns None for what it does not recognise.
"""

from __future__ import annotations

import json
import math
import os
import socket
from dataclasses import asdict, dataclass, field
from typing import Any

_MARKER = "dynalock"
_VERSION = 1


@dataclass(frozen=True)
class LockData:
    purpose: str = ""
    user_id: str | None = None
    username: str | None = None
    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)
    tab: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        return json.dumps({_MARKER: _VERSION, **asdict(self)}, separators=(",", ":"), sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, raw: bytes | None) -> LockData | None:
        if not raw:
            return None
        try:
            # Infinity, NaN and numbers past a float's range (1e400) read as null: nothing downstream
            # can use them, and int(inf) would raise OverflowError in every page and command that reads it.
            decoded = json.loads(raw, parse_constant=_nothing, parse_float=_finite_or_none)
        except (UnicodeDecodeError, ValueError):
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


def _nothing(_: str) -> None:
    return None


def _finite_or_none(text: str) -> float | None:
    number = float(text)
    return number if math.isfinite(number) else None


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)
