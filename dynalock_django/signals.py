"""Signals for audit and metrics; each is sent with ``sender`` = the lock key and ``lease=``.

``lease_lost`` is sent from the client's heartbeat thread.
"""

from django.dispatch import Signal

lease_acquired = Signal()
lease_released = Signal()
lease_lost = Signal()
