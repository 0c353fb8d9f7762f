"""Leader election and one-host jobs: hold a named lease for as long as the process runs.

    with Leadership("billing-scheduler") as leader:    # waits until this process leads
        while leader.is_leader():
            run_one_cycle()
    # or: leader.lost.wait() in a thread, or on_lost=callback

``run_while_leader`` runs a command only while holding the lease, stopping it
when the lease is lost (``manage.py dynalock run``).
"""

from __future__ import annotations

import logging
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from types import TracebackType

from .dynamodb import Lease
from .locks import KeyLock, lock_key

logger = logging.getLogger("dynalock_django.leader")

# What `dynalock run` exits with when the lease was lost and the command had to be stopped
# (EX_TEMPFAIL: a scheduler may simply try again).
EXIT_LEASE_LOST = 75


class Leadership:
    """A named lease held until released; ``lost`` is set (and ``on_lost`` called) if it is taken away."""

    def __init__(
        self, name: str, *, timeout: float | None = None, on_lost: Callable[[Lease], None] | None = None
    ) -> None:
        self.name = name
        self.lost = threading.Event()
        self._lock: KeyLock = lock_key(name, timeout=timeout, purpose="leader")
        self._on_lost = on_lost
        self.lease: Lease | None = None

    def acquire(self) -> Lease:
        lease = self._lock.acquire()
        lease.add_lost_callback(self._lost)
        self.lease = lease
        return lease

    def is_leader(self) -> bool:
        return self.lease is not None and self.lease.is_held()

    def release(self) -> None:
        """Step down; a leadership already lost is simply let go."""
        self._lock.release(best_effort=self.lost.is_set())

    def _lost(self, lease: Lease) -> None:
        logger.warning("Leadership %r lost: %s", self.name, lease.lost_reason)
        self.lost.set()
        if self._on_lost is not None:
            self._on_lost(lease)

    def __enter__(self) -> Leadership:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.release()


def run_while_leader(
    name: str, command: Sequence[str], *, timeout: float | None = None, grace_period: float = 10.0
) -> int:
    """Run ``command`` holding lease ``name``; its exit code, or EXIT_LEASE_LOST if the lease was lost.

    A lost lease stops the command: SIGTERM, then SIGKILL after ``grace_period``.
    """
    leader = Leadership(name, timeout=timeout)
    leader.acquire()
    try:
        child = subprocess.Popen(command)  # noqa: S603 (the operator's own command line)
        threading.Thread(target=_stop_when_lost, args=(leader, child, grace_period), daemon=True).start()
        code = child.wait()
    finally:
        leader.release()
    return EXIT_LEASE_LOST if leader.lost.is_set() else code


def _stop_when_lost(leader: Leadership, child: subprocess.Popen[bytes], grace_period: float) -> None:
    while child.poll() is None:
        if leader.lost.wait(0.5):
            logger.error("Lease %r lost: stopping pid %s", leader.name, child.pid)
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(grace_period)
            except subprocess.TimeoutExpired:
                child.kill()
            return
