"""At most once per schedule slot: a finished run's key stays held until ``min_hold`` seconds after it started.

N hosts firing the same slot run it once only if the first run still holds the
key when the last host fires, however short the run. So when the work ends
early, the lease is renewed one last time for the rest of ``min_hold`` (plus a
heartbeat period) and no longer renewed: the lock stays held even if this
process dies now, since a waiter takes over only once that version has stood
for its whole lease. This process waits out the rest and then releases it, so
the next slot finds the key free at once (and a copy of this slot watching it
sees its holder let go: it was alive, the copy skips).
"""

from __future__ import annotations

import logging
import threading

from ..dynamodb import DynamoDBError, Lease, LockClient, printable
from ..exceptions import ConfigurationError, LockLost

logger = logging.getLogger("dynalock_django.tasks")


def check_min_hold(min_hold: object, *, where: str) -> None:
    """None, or a finite number of seconds more than 0."""
    if min_hold is None:
        return
    valid = isinstance(min_hold, int | float) and not isinstance(min_hold, bool) and min_hold == min_hold
    if not valid or min_hold <= 0 or min_hold == float("inf"):  # type: ignore[operator]
        raise ConfigurationError(
            f"{where}={min_hold!r}: give a finite number of seconds, more than 0 (how long after its start a run "
            "keeps its key, however early it ends)."
        )


def hold_until(client: LockClient, lease: Lease, *, started: float, min_hold: float | None) -> None:
    """Keep ``lease`` (no longer renewed, not released) until ``started + min_hold`` on the client's clock.

    ``started``: the client clock's monotonic time when the run began. Returns at once when that has
    passed, or when the lease is no longer held (the release that follows says so). The caller releases.
    """
    if min_hold is None:
        return
    left = started + min_hold - client.clock.monotonic()
    if left <= 0 or not lease.is_held():
        return
    try:
        # The heartbeat period on top: the release below, due at the end of the hold, comes before any takeover.
        client.stop_renewing(lease, left + client.heartbeat_period)
    except (LockLost, DynamoDBError) as error:
        logger.warning("Could not hold %s for its min_hold (%s): releasing it now", printable(lease.key), error)
        return
    client.clock.wait(threading.Event(), left)
