"""Enqueue-time uniqueness: a marker lock held from the enqueue until a worker starts the copy.

The marker is a *detached* lease (no process renews it): ``queued_lease``
seconds after the enqueue it may be taken over, so a copy lost in the queue
(a broker that dropped it, a worker that died before starting it) frees its
key then. The worker that starts the copy releases the marker, whoever's it
is: only one marker per key exists at a time, and it can be the marker of a
later enqueue only if this copy's own had already run out (see the docs).
"""

from __future__ import annotations

import logging
import uuid

from .. import keys
from ..client import get_client
from ..dynamodb import Lease, printable
from ..exceptions import LockLost
from ..payload import LockData

logger = logging.getLogger("dynalock_django.tasks")

# Every marker's owner name starts so: a worker releases only markers, never a lock someone took by hand.
MARKER_OWNER = "dynalock-queued "


def take_queued_marker(queued_key: str, *, task: str, queued_lease: float | None) -> Lease | None:
    """The marker of a copy about to be enqueued (a detached lease), or None when one is queued already."""
    return get_client().try_acquire(
        queued_key,
        data=LockData(purpose="queued task", extra={"task": task}).to_bytes(),
        owner_name=f"{MARKER_OWNER}{uuid.uuid4()}",
        lease_duration=queued_lease,
        keep_alive=False,
        described=keys.described(queued_key, "queued task"),
    )


def release_queued_marker(queued_key: str, *, task: str) -> None:
    """A worker starts a copy: free its key's marker, so the next enqueue may queue another.

    The normal hand-over from the queue to the run, so released as its owner would (a handle on the
    detached marker, conditioned on its owner and token), logged at DEBUG: not an operator's forced
    release, whose WARNING operators alert on.
    """
    client = get_client()
    marker = client.get(queued_key)
    if marker is None or marker.is_released or marker.fencing_token is None:  # a marker of ours has a token
        return
    owner = marker.owner_name or ""
    if not owner.startswith(MARKER_OWNER):
        return
    handle = client.lease(marker.key, owner_name=owner, fencing_token=marker.fencing_token)
    try:
        handle.release()
    except LockLost:  # released or replaced meanwhile: another copy started, or was enqueued after ours
        logger.debug("Queued marker %s changed before its task %s started", printable(queued_key), printable(task))
        return
    logger.debug("Task %s started: released its queued marker %s", printable(task), printable(queued_key))
