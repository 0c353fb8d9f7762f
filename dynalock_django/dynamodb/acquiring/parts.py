"""The parts of one client's engine in this process, built once and handed whole to every kind's acquirer.

Built by :class:`.ProcessState` (a forked child builds its own); an
acquirer, a round or a wait loop takes what it uses from the bundle instead
of a dozen keywords each.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import threading

    from ..aws.call_threads import CallThreads
    from ..aws.store import LockStore
    from ..clock import Clock
    from ..leases.heartbeat import Heartbeat
    from ..leases.holdings import Holdings
    from ..leases.lease import LeaseClient
    from ..leases.lease_writes import LeaseWriter
    from ..wire.layout import TableLayout
    from .line_seats import Seats
    from .observations import Observations
    from .turns import Turns


@dataclass(frozen=True)
class EngineParts:
    client: LeaseClient  # the LockClient, which leases call back for their renewals and releases
    store: LockStore
    layout: TableLayout
    clock: Clock
    refresh_period: float
    observations: Observations  # what this client saw of other holders (the takeover rule)
    holdings: Holdings  # the leases this client keeps alive, and its threads waiting for each other
    heartbeat: Heartbeat
    lease_writer: LeaseWriter
    turns: Turns  # one waiter at a time per key goes after it
    seats: Seats  # the process's seat in each key's line
    calls: CallThreads  # the threads coroutines send their requests from
    closed: threading.Event
    ensure_open: Callable[[], None]
