"""Release a lock only once the transaction that used it has ended.

A lock taken inside ``transaction.atomic()`` (``ATOMIC_REQUESTS`` included)
protects writes that other processes cannot see until the commit: releasing
it at the end of the ``with`` block would let the next holder read the old
row. Django runs ``on_commit`` callbacks after a commit and drops them on a
rollback (of the transaction or of the savepoint they were registered in);
dropping our callback releases the lease through a finalizer, so both
outcomes release it, at the moment the transaction ends.
"""

from __future__ import annotations

import logging
import weakref

from django.db import connections, transaction

from .dynamodb import Lease, LeaseGroup
from .exceptions import DynalockError

logger = logging.getLogger("dynalock_django.release")


def in_user_transaction(using: str | None) -> bool:
    """True inside an atomic block of the application (not one opened by Django's TestCase)."""
    connection = connections[using or "default"]
    if not connection.in_atomic_block:
        return False
    # TestCase wraps every test in atomic blocks that never commit; Django marks them.
    return not all(getattr(block, "_from_testcase", False) for block in connection.atomic_blocks)


def release_when_transaction_ends(held: Lease | LeaseGroup, using: str | None) -> None:
    """Release a lease, or a group of them, once the current transaction commits or rolls back."""
    transaction.on_commit(_DeferredRelease(held), using=using, robust=True)


class _DeferredRelease:
    """Called on commit; garbage-collected (so finalized) when Django drops it on rollback."""

    def __init__(self, held: Lease | LeaseGroup) -> None:
        self._finalizer = weakref.finalize(self, _release, held)

    def __call__(self) -> None:
        self._finalizer()  # runs _release once, whichever comes first


def leases_of(held: Lease | LeaseGroup) -> list[Lease]:
    """The leases of one lock, whether it locked one key or a group."""
    return [held] if isinstance(held, Lease) else list(held)


def _release(held: Lease | LeaseGroup) -> None:
    leases = leases_of(held)
    try:
        released = held.release(best_effort=True)
    except DynalockError as error:  # the transaction has ended: nobody is left to raise to
        keys = ", ".join(repr(lease.key) for lease in leases)
        logger.warning("Releasing %s after its transaction failed: %s", keys, error)
        return
    if not released:
        # A release DynamoDB did not answer is not a loss: that lock frees itself within one lease (said above).
        told = [lease for lease in leases if lease.lost_reason is not None] or [
            lease for lease in leases if not lease.release_unconfirmed
        ]
        for lease in told:
            logger.warning("Lock %r was lost before its transaction ended (%s)", lease.key, lease.lost_reason)
