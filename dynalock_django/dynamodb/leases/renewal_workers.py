"""The threads that send a client's renewals side by side, the most urgent queued renewal first.

One renewal is one request, mostly spent waiting for DynamoDB's answer: a
few threads keep that many requests in flight, so a client renews that many
times more leases a period than one thread renewing them one after the
other. A priority queue, not a pool's first-in-first-out queue: a lease
whose safe time ends sooner (a retry, a shorter lease) overtakes those
queued before it. Threads start as the work needs them, up to ``count``,
and are daemons, like the heartbeat: a renewal in flight never holds up the
interpreter's exit.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..clock import start_thread

if TYPE_CHECKING:
    from ..clock import Clock

logger = logging.getLogger("dynalock_django.heartbeat")

Job = Callable[[], None]

_STOP = float("-inf")  # a stop sign overtakes every queued renewal


class RenewalWorkers:
    def __init__(self, count: int, name: str, clock: Clock) -> None:
        self._count = count
        self._name = name
        self._clock = clock  # idle workers wait on it, so a virtual clock knows when they are idle
        self._queue: list[tuple[float, int, Job | None]] = []  # a heap, under the mutex
        self._order = itertools.count()  # equal urgencies run in the order queued (and jobs are never compared)
        self._mutex = threading.Lock()
        self._work_queued = threading.Event()  # set while the queue holds something
        self._threads: list[threading.Thread] = []
        self._free = 0  # threads not running a job (starting, or waiting for one)
        self._queued = 0  # jobs not yet taken
        self._stopped = False

    def submit(self, urgency: float, job: Job) -> None:
        """Run ``job()`` on a worker, before every queued job of a larger ``urgency``; dropped once stopped."""
        with self._mutex:
            if self._stopped:
                return
            self._queued += 1
            if self._queued > self._free and len(self._threads) < self._count:
                self._free += 1
                self._threads.append(start_thread(self._clock, self._work, f"{self._name}-{len(self._threads) + 1}"))
            self._put(urgency, job)

    def stop(self) -> None:
        """No more jobs: each worker ends after its current one; queued jobs are dropped."""
        with self._mutex:
            self._stopped = True
            for _ in self._threads:
                self._put(_STOP, None)

    def _put(self, urgency: float, job: Job | None) -> None:
        heapq.heappush(self._queue, (urgency, next(self._order), job))
        self._work_queued.set()

    def _take(self) -> Job | None:
        """The most urgent job, waiting for one; None: stop."""
        while True:
            with self._mutex:
                if self._queue:
                    _, _, job = heapq.heappop(self._queue)
                    if job is not None:
                        self._free -= 1
                        self._queued -= 1
                    return job
                self._work_queued.clear()
            self._clock.wait(self._work_queued, None)

    def _work(self) -> None:
        while True:
            job = self._take()
            if job is None:
                return
            try:
                job()
            except Exception:
                # Only a bug lands here (a renewal's own failures are handled in the job); the worker outlives it.
                logger.exception("A renewal job failed")
            finally:
                with self._mutex:
                    self._free += 1
