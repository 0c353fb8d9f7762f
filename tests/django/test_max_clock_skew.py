"""``MAX_CLOCK_SKEW``: checked (dynalock.E017), passed to the process's client, and so used by ``Leadership``."""

from __future__ import annotations

import math

import pytest
from django.test import override_settings

from dynalock_django.checks import check_settings
from dynalock_django.client import get_client
from dynalock_django.dynamodb import LockClient, LockTimeout
from dynalock_django.leader import Leadership
from dynalock_django.locks import lock_key

from ..dynamodb_support import HEARTBEAT, LEASE, RequestCounter, make_dynamodb
from ..protocol.fake_clock import OffsetClock


@pytest.mark.parametrize("bad", [-1, -0.001, "1.0", True, math.nan, math.inf, [1]])
def test_e017_max_clock_skew_must_be_none_or_a_finite_number_of_seconds(dynalock, bad):
    with override_settings(DYNALOCK={**dynalock, "MAX_CLOCK_SKEW": bad}):
        messages = check_settings()
    assert [message.id for message in messages] == ["dynalock.E017"]
    assert "MAX_CLOCK_SKEW" in messages[0].msg
    assert "None" in messages[0].hint


@pytest.mark.parametrize("good", [None, 0, 0.5, 2])
def test_max_clock_skew_none_zero_or_seconds_pass_and_reach_the_client(dynalock, good):
    with override_settings(DYNALOCK={**dynalock, "MAX_CLOCK_SKEW": good}):
        assert check_settings() == []
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
