"""Events, recorded by every process to its own file, merged on one clock.

``time.monotonic()`` is CLOCK_MONOTONIC, shared by all processes of a Linux
host, so events from different processes can be ordered and compared.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Event:
    t: float
    worker: str
    kind: str
    key: str = ""
    token: int | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        extra = " ".join(f"{k}={v}" for k, v in sorted(self.data.items()))
        return f"{self.t:.3f} {self.worker:>10} {self.kind:<16} {self.key[:40]:<40} token={self.token} {extra}"


class Recorder:
    """Appends one JSON line per event; flushed at once so a SIGKILL loses nothing written before it."""

    def __init__(self, directory: Path, worker: str) -> None:
        self.worker = worker
        # A file of its own even if a killed process's pid comes round again: a cut-short last line stays last.
        name = f"{worker}-{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl"
        self._file = open(directory / name, "a", buffering=1)  # noqa: SIM115

    def __call__(self, kind: str, key: str = "", token: int | None = None, **data: Any) -> float:
        now = time.monotonic()
        self._file.write(
            json.dumps({"t": now, "worker": self.worker, "kind": kind, "key": key, "token": token, "data": data}) + "\n"
        )
        return now

    def close(self) -> None:
        self._file.close()


def load(directory: Path) -> list[Event]:
    events = []
    for path in directory.glob("*.jsonl"):
        for line in path.read_text().splitlines():
            try:
                raw = json.loads(line)
            except ValueError:  # the last line of a killed process may be cut short
                continue
            events.append(Event(raw["t"], raw["worker"], raw["kind"], raw["key"], raw["token"], raw["data"]))
    return sorted(events, key=lambda event: event.t)
