"""The plain lock of a semaphore's name as a count of 1: a task whose ``limit`` went from N to 1, or back.

A semaphore made with ``name_lock=True`` reads its name's item with its
permits (the same BatchGetItem) and is refused (CountInUse) while that lock
is held. After a permit is won, the name's item is marked (the readers'
mark, :mod:`..wire.readers_mark`, with the set's count) on the condition that
it is still free as read, unless it already carries a mark of that count or
more: the mark stays, so a set in steady use sends nothing more.

The holder of the plain lock, once granted, reads the mark from its grant
(no request). Without one no permit of the name has been taken since the
last holder shut them. With one it reads the permits up to the mark's count
in one BatchGetItem and, if none is held, shuts each (:func:`.permits.shut`:
a new record version, one UpdateItem per permit) and takes the mark off.

Why that excludes both ways (a permit P, the name's holder W): P marks after
its permit write, on the condition that nobody holds the name; W reads after
its grant. P's mark before W's grant: W sees it, and P's permit is either
held when W reads (W lets go) or not yet written, when W's shut changes the
version P's write is conditioned on (refused: P reads again and finds the
name held). P's mark after W's grant is refused (P gives its permit back).
A P that skipped its mark (it was there) read the name free before W's
grant: its write lands before W's read (W sees it) or meets a shut permit.

Request budget for the name's holder: none without a mark; with one, one
BatchGetItem, an UpdateItem per permit of the marked count, one to clear the
mark (once per change of count: the next grant shows no mark).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from ..aws.store import Refused
from ..clock import Instant
from ..exceptions import CountInUse, DynamoDBUnavailable
from ..leases.lease import record_of
from ..wire import permits, readers_mark
from ..wire.display import printable
from .permit_round import read_set

# Looks at the permits before the name's holder gives up (a permit changing under every look is taken as held).
_LOOKS = 3

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..acquiring.parts import EngineParts
    from ..leases.lease import Lease
    from ..wire.item import LockInfo
    from ..wire.layout import LockId


def exclude_permits(parts: EngineParts, lease: Lease, permit_ids: Callable[[int], list[LockId]]) -> None:
    """Return once no permit of the lease's name can be held; CountInUse (``.holder``: a permit) while one is.

    ``permit_ids(n)``: the keys of the name's permits 0 to n-1. A permit whose holder stopped
    renewing counts as gone once its version has stood for its lease on our clock (the takeover rule).
    The caller lets go of its lease when this raises. DynamoDBUnavailable when the permits cannot be read.
    """
    seen = readers_mark.ReadersSeen.of(record_of(lease).grant_answer)
    if seen is None or seen.mark is None:
        return
    ids = permit_ids(seen.count or permits.MAX_PERMITS)
    changed: LockId = ids[0]
    for _ in range(_LOOKS):
        still = _shut_all(parts, lease, ids)
        if still is not None:
            changed = still
        else:
            # Refused: nobody marks a name while it is held, so the mark changed already; the next holder reads again.
            with contextlib.suppress(Refused):
                parts.store.update(readers_mark.clear(parts.layout, lease.lock_id, seen.mark))
            return
    raise _refused(lease, changed, f"a permit ({printable(changed[0])!r}) changed at each of {_LOOKS} looks")


def _shut_all(parts: EngineParts, lease: Lease, ids: list[LockId]) -> LockId | None:
    """One look: None when every permit is shut; the permit that changed since the read; CountInUse if one is held."""
    lease.ensure_held()
    found = read_set(parts, ids, None)
    if isinstance(found, DynamoDBUnavailable):
        raise found
    now = Instant.read(parts.clock)
    for lock_id in ids:
        current = found[lock_id]
        if current is None or not parts.observations.saw(lock_id, current, now):
            continue
        observation = parts.observations.get(lock_id)
        if observation is None or not observation.may_take_over(now.monotonic):
            raise _refused(lease, lock_id, "it is held", current)
    for lock_id in ids:
        shut = permits.shut(
            parts.layout,
            lock_id,
            found[lock_id],
            owner_name=lease.owner_name,
            lease_duration=lease.lease_duration,
            now=parts.clock.time(),
        )
        try:
            parts.store.update(shut)
        except Refused as refused:
            if refused.current is not None and not refused.current.is_released:
                raise _refused(lease, lock_id, "it was taken meanwhile", refused.current) from None
            return lock_id  # changed otherwise: look again
    return None


def _refused(lease: Lease, lock_id: LockId, why: str, holder: LockInfo | None = None) -> CountInUse:
    return CountInUse(
        f"The plain lock of {printable(lease.key)!r} (a count of 1) excludes its permits, but permit "
        f"{printable(lock_id[0])!r} of another count may hold: {why}. It is let go; try again once the "
        "permits' holders are gone (a new count takes over once none of the old one is held).",
        holder,
    )
