"""LockClient's renewals by hand (a base class of LockClient): ``extend`` a lease now, or renew it a last time.

The heartbeat renews every held lease on its own; these are the holder's own writes besides it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .leases.lease import Lease
    from .options import CallChecks
    from .process_state import ProcessState


class LeaseMethods:
    """Renewing a held lease by hand; the client provides its checks and process state."""

    call_checks: CallChecks
    process_state: ProcessState

    def extend(self, lease: Lease, lease_duration: float | None = None) -> None:
        """Renew ``lease`` now, optionally changing its lease duration; LockLost if it is gone.

        A detached lease (``keep_alive=False``) is renewed even when this
        object believes it ran out: its owner may renew late, and the write's
        condition (owner and fencing token) decides whether it still holds it.
        """
        if lease_duration is not None:
            lease_duration = self.call_checks.lease_duration(lease_duration, keep_alive=lease.keep_alive)
        self.process_state.lease_writer.renew(lease, lease_duration)
        self.process_state.heartbeat.wake()

    def stop_renewing(self, lease: Lease, lease_duration: float) -> None:
        """Renew ``lease`` one last time with a lease of ``lease_duration`` seconds, then never again.

        The lock stays ours and is not released: a waiter may take it over only once that last
        version has stood for ``lease_duration`` on its clock, so it is held at least that long
        even if this process dies now. ``lease.release()`` still releases it before then.
        LockLost if it is no longer ours (then nothing changes).
        """
        duration = self.call_checks.lease_duration(lease_duration, keep_alive=False)
        self.process_state.lease_writer.renew_last(lease, duration)
