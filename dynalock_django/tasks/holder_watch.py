"""Take a task's lock unless a live run holds it: a dead holder is waited out, a live one is not.

A refused copy cannot tell from one read whether the holder still runs or was
killed: a killed worker's item looks the same until its lease has passed. So
it watches the item. A live holder's heartbeat writes a new record version
within a heartbeat period: the copy gives up at once (skip, raise). A dead
holder's version stands: after its lease the protocol's takeover rule lets
this client take the lock, and the copy runs. A retried copy meeting its own
earlier attempt (same task id, a later attempt) waits for that attempt's
release instead, which follows within moments.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..dynamodb import Lease, LockClient, LockInfo

# After the holder's lease, the takeover needs a read or two more: a little slack on the deadline.
_SLACK = 1.0


def acquire_unless_alive(
    client: LockClient,
    key: str,
    *,
    data: bytes,
    lease_duration: float | None,
    waits_for: Callable[[LockInfo], bool],
) -> Lease | LockInfo | None:
    """Our lease; or the item of a holder seen alive (None if it could not be read).

    ``waits_for(item)``: True when a renewing holder is still to be waited for
    (our own earlier attempt, about to release). Every wait ends: by the
    holder's lease plus a heartbeat period from the first read, at the latest.
    """
    first: LockInfo | None = None
    # Until a holder is seen, the deadline is our own lease's: a lock that keeps being released under us ends too.
    clock = client.clock  # the clock the client's takeover rule reads: one notion of "a lease has passed"
    deadline = clock.monotonic() + (lease_duration or client.lease_duration) + client.heartbeat_period + _SLACK
    while True:
        lease = client.try_acquire(key, data=data, lease_duration=lease_duration)
        if lease is not None:
            return lease
        seen = client.get(key)  # also remembered by the client for the takeover rule
        now = clock.monotonic()
        if seen is None or seen.is_released:
            if now >= deadline:
                return seen
            continue  # released between our two requests: ask again
        if first is None:
            first = seen
            deadline = now + seen.lease_duration + client.heartbeat_period + _SLACK
        elif _renewed(first, seen) and not waits_for(seen):
            return seen
        if now >= deadline:
            return seen
        time.sleep(min(client.refresh_period, max(0.0, deadline - now)))


def _renewed(first: LockInfo, seen: LockInfo) -> bool:
    """The holder wrote since we first read it (a heartbeat), or the lock changed hands: it is alive."""
    return (seen.record_version_number, seen.owner_name, seen.fencing_token) != (
        first.record_version_number,
        first.owner_name,
        first.fencing_token,
    )
