"""The heartbeat's timing rules and the holder's safe time, on a fake clock: no thread, no sleep."""

from __future__ import annotations

import pytest

from dynalock_django.dynamodb import DynamoDBUnavailable
from dynalock_django.dynamodb.leases.heartbeat import IDLE_WAKE_SECONDS
from dynalock_django.dynamodb.leases.lease import record_of

from ..clocks import TICK, held_lease, move_to
from ..heartbeat_support import LEASE, PERIOD, Recorder, heartbeat_for

pytestmark = pytest.mark.unit


def test_a_lease_is_renewed_one_period_after_its_last_write_and_not_before(clock):
    recorder, lease = Recorder(clock), held_lease(clock, lease_duration=LEASE)
    start = clock.monotonic()
    heartbeat = heartbeat_for(clock, recorder, [lease])

    assert heartbeat.beat() == start + PERIOD
    clock.advance(PERIOD - TICK)
    assert heartbeat.beat() == start + PERIOD
    assert recorder.renewed == []
    clock.advance(TICK)
    assert heartbeat.beat() == start + 2 * PERIOD  # renewed now: the next one counts from this write

    assert recorder.renewed == [start + PERIOD]
    assert lease.record_version_number == "v1"


def test_a_failed_renewal_is_retried_with_doubling_backoff_capped_at_a_period(clock):
    recorder, lease = Recorder(clock), held_lease(clock, lease_duration=LEASE)
    heartbeat = heartbeat_for(clock, recorder, [lease])
    recorder.failing = DynamoDBUnavailable("throttled")
    clock.advance(PERIOD)

    delays = []
    for _ in range(7):
        next_wake = heartbeat.beat()
        delays.append(round(next_wake - clock.monotonic(), 6))
        clock.advance(next_wake - clock.monotonic())
    # 50 ms doubling from the first failure: 0.1, 0.2, 0.4 ... never more than a period
    assert delays == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0]
    assert len(recorder.renewed) == 7


def test_backoff_is_jittered_between_half_and_all_of_the_delay(clock):
    recorder, lease = Recorder(clock), held_lease(clock, lease_duration=LEASE)
    asked = []
    heartbeat = heartbeat_for(clock, recorder, [lease], jitter=lambda low, high: asked.append((low, high)) or low)
    recorder.failing = DynamoDBUnavailable("throttled")
    clock.advance(PERIOD)

    assert heartbeat.beat() == pytest.approx(clock.monotonic() + 0.05)
    assert asked == [(0.5, 1.0)]


def test_after_a_successful_write_the_schedule_counts_from_it_again(clock):
    recorder, lease = Recorder(clock), held_lease(clock, lease_duration=LEASE)
    heartbeat = heartbeat_for(clock, recorder, [lease])
    recorder.failing = DynamoDBUnavailable("throttled")
    clock.advance(PERIOD)
    heartbeat.beat()
    heartbeat.beat()  # two failures in a row
    clock.advance(1.0)
    record_of(lease).renewed("manual", clock.monotonic(), LEASE)  # a manual extend() succeeded meanwhile

    assert heartbeat.beat() == clock.monotonic() + PERIOD


def test_a_lease_never_renewed_is_lost_exactly_when_its_safe_time_ends_naming_the_last_error(clock):
    recorder, lease = Recorder(clock), held_lease(clock, lease_duration=LEASE)
    heartbeat = heartbeat_for(clock, recorder, [lease])
    recorder.failing = DynamoDBUnavailable("InternalServerError")
    granted = clock.monotonic()
    clock.advance(PERIOD)
    while clock.monotonic() < granted + LEASE:
        next_wake = heartbeat.beat()
        assert recorder.expired == []
        assert lease.is_held()
        move_to(clock, min(next_wake, granted + LEASE))

    heartbeat.beat()

    assert [when for when, _ in recorder.expired] == [granted + LEASE]
    assert "ran out without a successful renewal (last error: InternalServerError)" in recorder.expired[0][1]
    assert not lease.is_held()


def test_a_renewal_failing_as_the_safe_time_ends_still_wakes_the_heartbeat_to_expire_the_lease(clock):
    recorder, lease = Recorder(clock, takes=1.0), held_lease(clock, lease_duration=LEASE)
    heartbeat = heartbeat_for(clock, recorder, [lease])
    recorder.failing = DynamoDBUnavailable("InternalServerError")
    move_to(clock, lease.safe_until - 0.5)  # due for a renewal whose failure arrives after the safe time

    next_wake = heartbeat.beat()

    assert not lease.is_held()  # out of time
    assert recorder.expired == []  # not yet reported lost
    assert next_wake <= clock.monotonic()  # so the heartbeat looks again at once, not after an idle minute
    heartbeat.beat()
    assert len(recorder.expired) == 1


def test_with_nothing_to_renew_the_heartbeat_sleeps_long(clock):
    heartbeat = heartbeat_for(clock, Recorder(clock), [])
    assert heartbeat.beat() == clock.monotonic() + IDLE_WAKE_SECONDS


def test_the_next_wake_is_the_earliest_renewal_of_all_leases(clock):
    recorder = Recorder(clock)
    first = held_lease(clock, lease_duration=LEASE, key="first")
    clock.advance(2.0)
    second = held_lease(clock, lease_duration=LEASE, key="second")
    heartbeat = heartbeat_for(clock, recorder, [second, first])

    assert heartbeat.beat() == record_of(first).valid_from + PERIOD


def test_safe_time_counts_from_the_start_of_the_last_successful_write(clock):
    lease = held_lease(clock, lease_duration=LEASE)  # its write started now
    clock.advance(3.0)  # the answer took 3 s to come back
    assert lease.remaining() == LEASE - 3.0
    assert lease.safe_until == record_of(lease).valid_from + LEASE

    started = clock.monotonic()
    clock.advance(1.5)
    record_of(lease).renewed("v1", started, LEASE)
    assert lease.remaining() == LEASE - 1.5

    clock.advance(LEASE - 1.5)
    assert lease.remaining() == 0
    assert not lease.is_held()
