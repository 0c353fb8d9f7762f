"""Leader election and one-host jobs: hold a named lease for as long as the process runs.

    with Leadership("billing-scheduler") as leader:    # waits until this process leads
        while leader.is_leader():
            run_one_cycle()
    # or: leader.lost.wait() in a thread, or on_lost=callback

``run_while_leader`` runs a command only while holding the lease, stopping it
when the lease is lost or this process is told to stop (``manage.py dynalock run``).
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Sequence
from types import TracebackType

from .client import get_client
from .dynamodb import Lease, printable, release_at_block_end
from .locks import KeyLock, lock_key
from .supervised import SupervisedCommand
from .tasks.min_hold import hold_until

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

    @property
    def key(self) -> str:
        """The election's lock key: its name under ``KEY_PREFIX``."""
        return self._lock.key

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
        # The block's exception wins; a release DynamoDB did not answer after success lets it stand.
        release_at_block_end(self.release, exc, [] if self.lease is None else [self.lease])


def run_while_leader(
    name: str,
    command: Sequence[str],
    *,
    timeout: float | None = None,
    grace_period: float = 10.0,
    min_hold: float | None = None,
) -> int:
    """Run ``command`` holding lease ``name``; its exit code, or EXIT_LEASE_LOST if the lease was lost.

    The command runs as a :class:`~dynalock_django.supervised.SupervisedCommand`: in its own process
    group, told its fencing token, killed by the kernel if this process dies (Linux). A lost lease,
    or SIGTERM to this process, stops it (SIGTERM to its group, SIGKILL after ``grace_period``);
    the lease is released only once nothing of it runs. Stopped with this process (Ctrl-Z), it is
    continued only while the lease holds, and otherwise killed (EXIT_LEASE_LOST). With ``min_hold``, a
    command that ended by itself keeps the lease (no longer renewed) until ``min_hold`` seconds after it
    was granted, and this process waits that long before releasing it: once per schedule slot.
    """
    supervised: SupervisedCommand | None = None

    def stop(lease: Lease) -> None:
        if supervised is not None:
            logger.error("Lease %r lost: stopping its command %s", name, printable(command[0]))
            supervised.stop()

    leader = Leadership(name, timeout=timeout, on_lost=stop)

    def still_held() -> bool:
        if leader.is_leader():
            return True
        # It ran out while this process was stopped (Ctrl-Z): the heartbeat, stopped too, could not say so.
        leader.lost.set()
        return False

    # The command's status is its own: a release DynamoDB did not answer after it ended does not change
    # it (the lease, no longer renewed, frees itself within one lease; the failure is logged and counted).
    lease = leader.acquire()
    started = get_client().clock.monotonic()
    try:
        supervised = SupervisedCommand(
            command, fencing_token=lease.fencing_token, grace_period=grace_period, still_held=still_held
        )
        with supervised.forwarding_signals():
            supervised.start()
            if leader.lost.is_set():  # lost before the command started: the callback had nothing to stop
                supervised.stop()
            code = supervised.wait()
        if not supervised.stopped:  # told to stop (SIGTERM), this process lets go at once
            hold_until(get_client(), lease, started=started, min_hold=min_hold)
    except BaseException as error:
        release_at_block_end(leader.release, error, [lease])
        raise
    release_at_block_end(leader.release, None, [lease])
    if leader.lost.is_set():
        return EXIT_LEASE_LOST
    return 128 + signal.SIGTERM if supervised.stopped else code
