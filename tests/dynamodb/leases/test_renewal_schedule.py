"""The heartbeat's schedule of retries after failed renewals: the one back-off rule, capped at a period."""

from __future__ import annotations

import pytest

from dynalock_django.dynamodb import DynamoDBUnavailable, VirtualClock
from dynalock_django.dynamodb.leases.renewal_schedule import FIRST_RETRY_SECONDS, RenewalSchedule

from ..clocks import held_lease

pytestmark = pytest.mark.unit

PERIOD = 2.0


def slowest(low: float, high: float) -> float:
    return high


def test_retries_double_from_the_first_pause_up_to_a_period(clock: VirtualClock) -> None:
    lease = held_lease(clock, lease_duration=3600.0)
    schedule = RenewalSchedule(PERIOD, slowest)
    now = clock.monotonic()
    pauses = []
    for _ in range(8):
        schedule.failed(lease, DynamoDBUnavailable("down"), now)
        pauses.append(schedule.renewal_at(lease) - now)
    assert pauses[:5] == pytest.approx([FIRST_RETRY_SECONDS * 2.0**count for count in range(1, 6)])
    assert pauses[-1] == pytest.approx(PERIOD)


def test_a_long_lease_failing_thousands_of_renewals_in_a_row_still_gets_a_pause(clock: VirtualClock) -> None:
    # A lease of hours on a short period fails renewals for as long as DynamoDB is down: the pause must
    # not overflow (2.0 ** 1024 does) and end the heartbeat's thread.
    lease = held_lease(clock, lease_duration=86_400.0)
    schedule = RenewalSchedule(PERIOD, slowest)
    now = clock.monotonic()
    for _ in range(1_100):
        count = schedule.failed(lease, DynamoDBUnavailable("down"), now)
    assert count == 1_100
    assert schedule.renewal_at(lease) - now == pytest.approx(PERIOD)
