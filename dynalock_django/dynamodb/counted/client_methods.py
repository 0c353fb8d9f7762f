"""LockClient's counted locks: ``semaphore`` and ``readers_writer`` (a base class).

Each builds its face and sends nothing; the faces' calls make the requests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..wire import permits as permit_keys
from .name_lock import exclude_permits
from .readers_writer import DEFAULT_MAX_READERS, ReadersWriterLock
from .semaphore import Semaphore

if TYPE_CHECKING:
    from ..aws.store import LockStore
    from ..leases.lease import Lease
    from ..options import CallChecks
    from ..process_state import ProcessState


class CountedMethods:
    """Counted locks of the client: the client provides its checks, store and process state."""

    call_checks: CallChecks
    process_state: ProcessState
    store: LockStore

    def semaphore(self, name: str, permits: int, *, sort_key: str | None = None, name_lock: bool = False) -> Semaphore:
        """At most ``permits`` holders of ``name`` at once: one lock item per permit, each with its own lease and token.

        No request: the Semaphore's calls make them. The count is stored on the items: another count
        is refused (CountInUse) while a permit of the stored one is held, and takes over once none is.
        ``name_lock``: the plain lock of ``name`` is a holder of a count of 1 (see :meth:`exclude_permits`).
        See docs/protocol.md, "Semaphores".
        """
        return Semaphore(self, name, permits, sort_key=sort_key, name_lock=name_lock)

    def exclude_permits(self, lease: Lease) -> None:
        """With ``lease`` of a plain lock just granted, keep out the permits of a ``name_lock`` semaphore of its key.

        No request unless such a permit was taken since the last holder of the lock did this; then
        one read of the permits and a write per permit. Raises CountInUse (``.holder``: the permit)
        while a permit is held, or DynamoDBUnavailable, after letting go of ``lease``. See docs/protocol.md,
        "Semaphores".
        """
        name, sort_key = lease.lock_id
        try:
            exclude_permits(
                self.process_state.parts,
                lease,
                lambda count: [
                    self.call_checks.lock_id(
                        permit_keys.permit_key(name, permit_keys.SEMAPHORE_SUFFIX, index), sort_key
                    )
                    for index in range(count)
                ],
            )
        except BaseException:  # CountInUse, or the permits could not be read: the caller does not hold the name
            lease.release(best_effort=True)
            raise

    def readers_writer(
        self, name: str, *, max_readers: int = DEFAULT_MAX_READERS, sort_key: str | None = None
    ) -> ReadersWriterLock:
        """Many readers of ``name`` at once (up to ``max_readers``), or one writer, who keeps new readers out.

        No request. The writer's item is the plain lock ``name``. See docs/protocol.md, "Readers and writers".
        """
        return ReadersWriterLock(self, name, max_readers=max_readers, sort_key=sort_key)
