"""LockClient's last renewal of a lease (a base class of LockClient): ``stop_renewing``.

The heartbeat renews every held lease on its own; this takes one out of it, still held.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .leases.lease import Lease
    from .options import CallChecks
    from .process_state import ProcessState


class LeaseMethods:
    """Ending a held lease's renewals; the client provides its checks and process state."""

    call_checks: CallChecks
    process_state: ProcessState

    def stop_renewing(self, lease: Lease, lease_duration: float) -> None:
        """Renew ``lease`` one last time with a lease of ``lease_duration`` seconds, then never again.

        The lock stays ours and is not released: a waiter may take it over only once that last
        version has stood for ``lease_duration`` on its clock, so it is held at least that long
        even if this process dies now. ``lease.release()`` still releases it before then.
        LockLost if it is no longer ours (then nothing changes).
        """
        duration = self.call_checks.lease_duration(lease_duration, keep_alive=False)
        self.process_state.lease_writer.renew_last(lease, duration)
