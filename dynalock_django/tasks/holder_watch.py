"""Take a task's lock unless a live run holds it: a dead holder is waited out, a live one is not.

A refused copy cannot tell from one read whether the holder still runs or was
killed: a killed worker's item looks the same until its lease has passed. So
it watches the item. A live holder's heartbeat writes a new record version
within a heartbeat period: the copy gives up at once (skip, raise). A dead
holder's version stands: after its lease the protocol's takeover rule lets
this client take the lock, and the copy runs. A retried copy meeting its own
earlier attempt (same task id, a later attempt) waits for that attempt's
release instead, which follows within moments. A holder that releases the key
while the copy watches (a run shorter than a heartbeat period) was alive too:
the copy gives up as well, so a duplicate never runs again behind a short run.

A task with ``limit=N`` watches its semaphore's N permits the same way: the
copy runs when it gets a permit (one free, let go meanwhile, or taken over
from a holder silent for a lease), and gives up once N holders were each seen
renewing (all N runs alive), or when its wait ends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..dynamodb import Clock, Described, Lease, LockClient, LockInfo, Semaphore

# After the holder's lease, the takeover needs a read or two more: a little slack on the deadline.
_SLACK = 1.0
# The longest a copy waits for a holder, whatever lease the holder's item claims or this task asks for:
# a waiting copy holds a worker slot, and a run's lease only matters once its worker died (the heartbeat
# renews it before). An item in the way may claim anything (31,700 years by hand, 300 s when malformed).
# Past the wait the copy gives up visibly (skip: ``task_skipped`` naming the holder; raise: TaskLocked).
MAX_HOLDER_WAIT_SECONDS = 3600.0


def acquire_unless_alive(
    client: LockClient,
    key: str,
    *,
    described: Described,
    data: bytes,
    lease_duration: float | None,
    waits_for: Callable[[LockInfo], bool],
) -> Lease | LockInfo | None:
    """Our lease; or the item of a holder seen alive (None if it could not be read).

    ``waits_for(item)``: True when a renewing holder is still to be waited for
    (our own earlier attempt, about to release). A holder that releases the key
    while this copy looks was alive too: the copy gives up as for a renewal,
    however short the run ("skip" means skip). Every wait ends: a heartbeat
    period after the lease this copy's own run would claim (``lease_duration``,
    or the client's), or the holder's if shorter, from the first read; never
    later than :data:`MAX_HOLDER_WAIT_SECONDS`.
    """
    clock = client.clock  # the clock the client's takeover rule reads: one notion of "a lease has passed"
    own_lease = min(lease_duration or client.lease_duration, MAX_HOLDER_WAIT_SECONDS)
    first: LockInfo | None = None
    # Until a holder is seen, the deadline is our own lease's: a lock that keeps being released under us ends too.
    deadline = clock.monotonic() + own_lease + client.heartbeat_period + _SLACK
    lease = client.try_acquire(key, data=data, lease_duration=lease_duration, described=described)
    while lease is None:
        # Refused: a holding stood in the way. From here on the copy tries again only when that cannot
        # hide a live run: the key freed by an operator (or by our own earlier attempt, awaited), or
        # its holder silent for a whole lease (the takeover rule). A holder that let go was alive.
        seen = client.get(key)  # also remembered by the client for the takeover rule
        now = clock.monotonic()
        if seen is None or seen.is_released:
            last = first or seen
            if last is not None and _let_go_by_its_holder(seen) and not waits_for(last):
                return last  # the run in our way ended while we looked (a short run): it was alive
            lease = client.try_acquire(key, data=data, lease_duration=lease_duration, described=described)
            if lease is None and now >= deadline:
                return seen
            continue
        if first is None:
            first = seen
            # The holder's claim bounds the wait only up to our own lease: an item may claim any lease at all.
            deadline = now + min(seen.lease_duration, own_lease) + client.heartbeat_period + _SLACK
        elif _renewed(first, seen) and not waits_for(seen):
            return seen
        if client.available_in(seen) == 0:  # its holder stopped renewing a lease ago: take it over
            lease = client.try_acquire(key, data=data, lease_duration=lease_duration, described=described)
            if lease is not None:
                break
        if now >= deadline:
            return seen
        _pause(clock, min(client.refresh_period, max(0.0, deadline - now)))
    return lease


def acquire_permit_unless_alive(
    client: LockClient,
    counted: Semaphore,
    *,
    data: bytes,
    lease_duration: float | None,
    waits_for: Callable[[LockInfo], bool],
) -> Lease | LockInfo | None:
    """A permit of ``counted``; or a holder seen alive once ``counted.permits`` holders were (None if none read).

    The semaphore's ``try_acquire`` takes a free permit, or one whose holder
    stopped renewing a lease ago (the takeover rule, per permit). The wait ends
    as :func:`acquire_unless_alive`'s does.
    """
    clock = client.clock
    own_lease = min(lease_duration or client.lease_duration, MAX_HOLDER_WAIT_SECONDS)
    deadline = clock.monotonic() + own_lease + client.heartbeat_period + _SLACK
    first: dict[str, LockInfo] = {}  # each permit's holding as first seen
    alive: dict[str, LockInfo] = {}  # the permits whose holder renewed since: a live run
    lease = counted.try_acquire(data=data, lease_duration=lease_duration)
    while lease is None:
        now = clock.monotonic()
        for holder in counted.holders():
            seen = holder.lock
            earlier = first.setdefault(seen.key, seen)
            if seen is not earlier and _renewed(earlier, seen) and not waits_for(seen):
                alive[seen.key] = seen
        if len(alive) >= counted.permits or now >= deadline:
            return next(iter(alive.values()), next(iter(first.values()), None))
        _pause(clock, min(client.refresh_period, max(0.0, deadline - now)))
        lease = counted.try_acquire(data=data, lease_duration=lease_duration)
    return lease


def _let_go_by_its_holder(seen: LockInfo | None) -> bool:
    """Released by its own holder (or deleted, as ``delete_on_release`` does), not freed by an operator."""
    return seen is None or (seen.is_released and seen.released_by is None)


def _pause(clock: Clock, seconds: float) -> None:
    """Wait ``seconds`` of the client's clock (a virtual clock moves instead of sleeping)."""
    clock.wait(threading.Event(), seconds)


def _renewed(first: LockInfo, seen: LockInfo) -> bool:
    """The holder wrote since we first read it (a heartbeat), or the lock changed hands: it is alive."""
    return (seen.record_version_number, seen.owner_name, seen.fencing_token) != (
        first.record_version_number,
        first.owner_name,
        first.fencing_token,
    )
