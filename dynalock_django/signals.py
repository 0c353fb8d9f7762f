"""Signals for audit and metrics; each is sent with ``sender`` = the lock key and ``lease=``.

``lease_lost`` is sent from the client's heartbeat thread (or one of its renewal workers).

``task_skipped`` is sent when a ``lock_task`` task did not run because a live
run holds its key: ``sender`` = the key, ``task=`` its dotted name, ``holder=``
the lock item in the way (a LockInfo, or None when it could not be read).
"""

from django.dispatch import Signal

lease_acquired = Signal()
lease_released = Signal()
lease_lost = Signal()
task_skipped = Signal()
