"""Defects the fault-injection run (tests/chaos) found, each pinned by a test."""

from __future__ import annotations

import pytest

from dynalock_django.dynamodb import LockLost
from dynalock_django.dynamodb.leases.lease import record_of

from ...dynamodb_support import LEASE


def test_a_release_that_finds_the_lock_taken_over_reports_the_lease_lost(make_client, key):
    """A holder paused past its lease resumes and releases before its heartbeat runs: the release
    raised LockLost, but on_lost callbacks never ran, wait_until_lost() never returned, and release
    callbacks (the Django lease_released signal) ran instead."""
    holder, other = make_client(), make_client()
    lease = holder.acquire(key)
    lost, released = [], []
    lease.add_lost_callback(lost.append)
    lease.add_release_callback(released.append)
    with record_of(lease).write_lock:  # the heartbeat cannot renew: as if the process were stopped
        taken = other.acquire(key, timeout=5 * LEASE)
        with pytest.raises(LockLost):
            lease.release()
    assert lease.wait_until_lost(0)
    assert lost == [lease]
    assert released == []
    assert not lease.is_held()
    assert other.get(key).fencing_token == taken.fencing_token
