"""LockClient's counted locks: ``semaphore`` and ``readers_writer`` (a base class).

Each builds its face and sends nothing; the faces' calls make the requests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .readers_writer import DEFAULT_MAX_READERS, ReadersWriterLock
from .semaphore import Semaphore

if TYPE_CHECKING:
    from ..aws.store import LockStore
    from ..options import CallChecks
    from ..process_state import ProcessState
    from ..telemetry import Described


class CountedMethods:
    """Counted locks of the client: the client provides its checks, store and process state."""

    call_checks: CallChecks
    process_state: ProcessState
    store: LockStore

    def semaphore(
        self, name: str, permits: int, *, sort_key: str | None = None, described: Described | None = None
    ) -> Semaphore:
        """At most ``permits`` holders of ``name`` at once: one lock item per permit, each with its own lease and token.

        No request: the Semaphore's calls make them. Every caller of one name must ask for the same
        count (it is stored on the items; another count is refused). See docs/protocol.md, "Semaphores".
        ``described``: how telemetry names the lock (its permits are of kind ``semaphore``).
        """
        return Semaphore(self, name, permits, sort_key=sort_key, described=self.call_checks.described(described))

    def readers_writer(
        self,
        name: str,
        *,
        max_readers: int = DEFAULT_MAX_READERS,
        sort_key: str | None = None,
        described: Described | None = None,
    ) -> ReadersWriterLock:
        """Many readers of ``name`` at once (up to ``max_readers``), or one writer, who keeps new readers out.

        No request. The writer's item is the plain lock ``name``. See docs/protocol.md, "Readers and writers".
        ``described``: how telemetry names the writer (its readers are of kind ``read``).
        """
        described = self.call_checks.described(described)
        return ReadersWriterLock(self, name, max_readers=max_readers, sort_key=sort_key, described=described)
