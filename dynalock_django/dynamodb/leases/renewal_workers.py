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

import itertools
import logging
import queue
import threading
from collections.abc import Callable

logger = logging.getLogger("dynalock_django.heartbeat")

Job = Callable[[], None]

_STOP = float("-inf")  # a stop sign overtakes every queued renewal


class RenewalWorkers:
    def __init__(self, count: int, name: str) -> None:
        self._count = count
        self._name = name
        self._queue: queue.PriorityQueue[tuple[float, int, Job | None]] = queue.PriorityQueue()
        self._order = itertools.count()  # equal urgencies run in the order queued (and jobs are never compared)
        self._mutex = threading.Lock()
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
                thread = threading.Thread(target=self._work, name=f"{self._name}-{len(self._threads) + 1}", daemon=True)
                self._threads.append(thread)
                self._free += 1
                thread.start()
            self._queue.put((urgency, next(self._order), job))

    def stop(self) -> None:
        """No more jobs: each worker ends after its current one; queued jobs are dropped."""
        with self._mutex:
            self._stopped = True
            threads = len(self._threads)
        for _ in range(threads):
            self._queue.put((_STOP, next(self._order), None))

    def _work(self) -> None:
        while True:
            _, _, job = self._queue.get()
            if job is None:
                return
            with self._mutex:
                self._free -= 1
                self._queued -= 1
            try:
                job()
            except Exception:
                # Only a bug lands here (a renewal's own failures are handled in the job); the worker outlives it.
                logger.exception("A renewal job failed")
            finally:
                with self._mutex:
                    self._free += 1
