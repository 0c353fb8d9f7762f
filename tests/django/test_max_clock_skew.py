"""``MAX_CLOCK_SKEW``: passed to the process's client, and so used by ``Leadership`` (its check: test_checks.py)."""

from __future__ import annotations

import pytest
from django.test import override_settings

from dynalock_django.client import get_client
from dynalock_django.dynamodb import LockClient, LockTimeout
from dynalock_django.leader import Leadership
from dynalock_django.locks import lock_key

from ..dynamodb.clocks import OffsetClock
from ..dynamodb_support import HEARTBEAT, LEASE, RequestCounter, make_dynamodb

pytestmark = pytest.mark.uses_dynalock


@pytest.mark.parametrize("good", [None, 0, 0.5, 2])
def test_max_clock_skew_reaches_the_client(dynalock, good):
    with override_settings(DYNALOCK={**dynalock, "MAX_CLOCK_SKEW": good}):
        assert get_client().max_clock_skew == good
    assert get_client().max_clock_skew is None  # the default


def crash_leader(dynalock, name, *, sent_ago):
    """A leader on another host that died: its last write was sent ``sent_ago`` seconds ago."""
    crashed = LockClient(
        make_dynamodb(dynalock["ENDPOINT_URL"]),
        dynalock["TABLE_NAME"],
        lease_duration=LEASE,
        heartbeat_period=HEARTBEAT,
        clock=OffsetClock(-sent_ago),  # its stamp reads as if written that long ago
    )
    lease = crashed.acquire(lock_key(name).key)
    crashed.close(release=False)
    return lease


def test_leadership_takes_over_a_leader_that_died_two_leases_ago_at_once(dynalock):
    dead = crash_leader(dynalock, "billing", sent_ago=2 * LEASE)
    with override_settings(DYNALOCK={**dynalock, "MAX_CLOCK_SKEW": 0.5}):
        counter = RequestCounter(get_client().dynamodb)
        with Leadership("billing", timeout=5 * LEASE) as leader:
            assert leader.is_leader()
            assert leader.lease.fencing_token > dead.fencing_token
        # The refused write brought the dead leader's item; the second took it over; then the release.
        assert dict(counter.calls) == {"UpdateItem": 3}


def test_without_the_setting_leadership_waits_for_the_clock_free_rule(dynalock):
    crash_leader(dynalock, "billing", sent_ago=2 * LEASE)
    with pytest.raises(LockTimeout):
        Leadership("billing", timeout=LEASE / 2).acquire()  # not before a whole lease of watching
    with Leadership("billing", timeout=5 * LEASE) as leader:
        assert leader.is_leader()
