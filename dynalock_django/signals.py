"""Signals for audit and metrics; each is sent with ``sender`` = the lock key and ``lease=``.

The ``lease_*`` signals are sent for the locks of ``lock_object``, ``lock_key``, ``lock_objects``,
``@requires_lock`` and each ``@lock_task`` run. ``lease_lost`` is sent from the client's heartbeat
thread (or one of its renewal workers). Each lease ends with one of ``lease_released``,
``lease_release_failed`` or ``lease_lost``.

``lease_release_failed`` is sent instead of ``lease_released`` when this process let go of the
lease but DynamoDB did not confirm the release (unavailable, a time-out, the circuit breaker open):
the lease is no longer renewed, so the lock frees itself within one lease (``lease.lease_duration``).
After a block that succeeded, the block's result stands (docs/guarantees.md).

``task_skipped`` is sent when a ``lock_task`` task did not run because a live
run holds its key: ``sender`` = the key, ``task=`` its dotted name, ``holder=``
the lock item in the way (a LockInfo, or None when it could not be read), and
``task_id=`` the skipped copy's id in its queue (Celery's ``request.id``, Django's
``TaskResult.id`` for a task with ``takes_context=True``; None for a plain call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.dispatch import Signal

if TYPE_CHECKING:
    from .dynamodb import Lease

__all__ = ["lease_acquired", "lease_lost", "lease_release_failed", "lease_released", "task_skipped"]

lease_acquired = Signal()
"""Sent when a lock is taken: ``sender`` = its key, ``lease=`` the new lease."""
lease_released = Signal()
"""Sent when a lease's release was confirmed by DynamoDB: ``sender`` = the key, ``lease=``."""
lease_release_failed = Signal()
"""Sent instead of ``lease_released`` when DynamoDB did not confirm the release: it frees within a lease."""
lease_lost = Signal()
"""Sent from the heartbeat when a lease was lost (taken over, force-released, or its safe time ran out)."""
task_skipped = Signal()
"""Sent when a ``lock_task`` run was skipped: ``sender`` = the key, ``task=``, ``holder=``, ``task_id=``."""


def watch(lease: Lease) -> None:
    """Send ``lease_released`` (or ``lease_release_failed``) or ``lease_lost`` when ``lease`` ends.

    The taker sends ``lease_acquired`` itself.
    """
    lease.add_release_callback(_send_released)
    lease.add_lost_callback(_send_lost)


def _send_released(lease: Lease) -> None:
    ended = lease_release_failed if lease.release_unconfirmed else lease_released
    ended.send(sender=lease.key, lease=lease)


def _send_lost(lease: Lease) -> None:
    lease_lost.send(sender=lease.key, lease=lease)
