"""When the workers run: from the moment the last of them is ready, for the workload's duration.

Starting the clock when the runner spawns them would let a loaded machine spend the whole short
run importing Django in each worker (a run with no operations, which proves nothing)."""

from __future__ import annotations

import math
import time
from multiprocessing.context import BaseContext
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from multiprocessing.sharedctypes import Synchronized


class NotReady(RuntimeError):
    pass


class RunWindow:
    """Shared with the workers (a ``Value`` passes to them as they start)."""

    def __init__(self, context: BaseContext) -> None:
        self._ready: Synchronized[int] = context.Value("i", 0)
        self._until: Synchronized[float] = context.Value("d", math.inf)

    def arrive(self) -> None:
        """A worker is set up and about to run its first operation."""
        with self._ready.get_lock():
            self._ready.value += 1

    def until(self) -> float:
        """Monotonic time the run ends at; infinity while the window is not open yet."""
        return self._until.value

    def open_when_ready(self, workers: int, duration: float, *, patience: float = 120.0) -> float:
        deadline = time.monotonic() + patience
        while self._ready.value < workers:
            if time.monotonic() > deadline:
                raise NotReady(f"only {self._ready.value} of {workers} workers were ready after {patience:.0f} s")
            time.sleep(0.02)
        self._until.value = time.monotonic() + duration
        return self._until.value
