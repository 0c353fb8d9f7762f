"""Many leases on one heartbeat, on a fake clock: the order and spread of their renewals, the warning, the lag."""

from __future__ import annotations

import logging

import pytest

from dynalock_django.dynamodb import DynamoDBUnavailable, VirtualClock
from dynalock_django.dynamodb.leases.heartbeat import LOOKS_PER_PERIOD
from dynalock_django.dynamodb.leases.lease import record_of
from dynalock_django.dynamodb.leases.renewal_capacity import WARNING_INTERVAL_SECONDS
from dynalock_django.dynamodb.leases.renewal_schedule import SPREAD_SHARE

from ..clocks import held_lease, move_to
from ..heartbeat_support import LEASE, PERIOD, Later, Recorder, heartbeat_for

pytestmark = pytest.mark.unit

SPREAD = PERIOD * SPREAD_SHARE


def run_until(clock, heartbeat, until: float) -> None:
    """Beat whenever the heartbeat asks to, until ``until``."""
    while clock.monotonic() < until:
        wake = heartbeat.beat()  # a renewal that takes time moves the clock on: time never goes back
        move_to(clock, max(min(wake, until), clock.monotonic()))
    heartbeat.beat()


def test_leases_granted_together_are_renewed_spread_over_a_quarter_period_and_never_early(clock):
    recorder = Recorder(clock)
    granted = clock.monotonic()
    leases = [held_lease(clock, lease_duration=LEASE, key=f"k{index}") for index in range(200)]
    heartbeat = heartbeat_for(clock, recorder, leases)

    run_until(clock, heartbeat, granted + PERIOD + SPREAD)

    first_round = recorder.renewed
    assert len(first_round) == 200  # every lease renewed once, within the spread
    assert min(first_round) == granted + PERIOD  # the first on time, none before its period
    assert max(first_round) <= granted + PERIOD + SPREAD
    # Spread, not a burst: each tenth of the quarter period starts about a tenth of them; the first
    # also what the pace lets out at once (as much as it paces over one look of the heartbeat).
    start = granted + PERIOD
    tenths = [
        sum(start + SPREAD * i / 10 <= at < start + SPREAD * (i + 1) / 10 for at in first_round) for i in range(10)
    ]
    at_once = (PERIOD / LOOKS_PER_PERIOD) / (SPREAD / 200)
    assert tenths[0] <= 20 + at_once + 1, tenths
    assert max(tenths[1:]) <= 21, tenths

    # The next round keeps the spread: each lease a period after its own last write, none sooner.
    renewed_before = {lease.key: record_of(lease).valid_from for lease in leases}
    recorder.renewed.clear()
    run_until(clock, heartbeat, granted + 2 * PERIOD + SPREAD)
    assert len(recorder.renewed) == 200
    for lease in leases:
        assert record_of(lease).valid_from >= renewed_before[lease.key] + PERIOD


def test_the_leases_closest_to_the_end_of_their_safe_time_are_renewed_first(clock):
    recorder = Recorder(clock)
    # Granted together, due together, but with leases of different lengths.
    durations = {"long": 3 * LEASE, "short": 3 * PERIOD, "middle": LEASE}
    leases = [held_lease(clock, lease_duration=seconds, key=key) for key, seconds in durations.items()]
    heartbeat = heartbeat_for(clock, recorder, leases)
    clock.advance(PERIOD)

    run_until(clock, heartbeat, clock.monotonic() + SPREAD)

    assert recorder.renewed_keys == ["short", "middle", "long"]


class FailsOnce(Recorder):
    """The first renewal of the lease ``key`` fails; every other succeeds."""

    def __init__(self, clock: VirtualClock, key: str) -> None:
        super().__init__(clock)
        self.key = key

    def renew(self, lease) -> None:
        first_try = lease.key == self.key and self.key not in self.renewed_keys
        self.failing = DynamoDBUnavailable("throttled") if first_try else None
        super().renew(lease)


def test_a_retry_is_not_held_back_by_the_pace_of_the_others(clock):
    recorder = FailsOnce(clock, "failing")
    failing = held_lease(clock, lease_duration=LEASE, key="failing")
    clock.advance(1.0)
    others = [held_lease(clock, lease_duration=LEASE, key=f"k{index}") for index in range(400)]
    heartbeat = heartbeat_for(clock, recorder, [*others, failing])
    clock.advance(PERIOD)
    heartbeat.beat()  # the most urgent (granted first) goes first, and fails; the pace holds back most others
    assert recorder.renewed_keys[0] == "failing"
    assert len(recorder.renewed_keys) < 400 / 4

    retry_by = clock.monotonic() + 0.1  # 50 to 100 ms later, not paced behind the others
    run_until(clock, heartbeat, retry_by)

    assert recorder.renewed_keys.count("failing") == 2
    assert len(recorder.renewed_keys) < 400 / 2  # most of the others are still due: the retry went first
    assert lease_renewed_at(failing) == max(
        at for at, key in zip(recorder.renewed, recorder.renewed_keys, strict=True) if key == "failing"
    )


def lease_renewed_at(lease) -> float:
    return record_of(lease).valid_from


def test_a_lease_with_a_renewal_queued_is_not_handed_out_again_and_runs_out_while_queued(clock):
    recorder, workers = Recorder(clock), Later()
    lease = held_lease(clock, lease_duration=LEASE)
    heartbeat = heartbeat_for(clock, recorder, [lease], run_on=workers)
    clock.advance(PERIOD)
    handed_out = clock.monotonic()
    # Its next renewal may be due a period after it was handed out (sooner than its safe time ends): looked at then.
    assert heartbeat.beat() == handed_out + PERIOD
    assert len(workers.jobs) == 1

    clock.advance(PERIOD)  # every worker busy elsewhere: the renewal is still queued
    heartbeat.beat()
    assert len(workers.jobs) == 1  # not handed out twice

    move_to(clock, lease.safe_until)
    heartbeat.beat()
    assert [when for when, _ in recorder.expired] == [lease.safe_until]  # lost exactly when its safe time ends
    workers.jobs[0]()  # a worker takes it at last: the lease is gone, nothing is written
    assert recorder.renewed == []


def test_a_lease_whose_renewal_is_running_is_left_to_its_answer(clock):
    recorder, workers = Recorder(clock), Later()
    lease = held_lease(clock, lease_duration=LEASE)
    heartbeat = heartbeat_for(clock, recorder, [lease], run_on=workers)
    clock.advance(PERIOD)
    heartbeat.beat()

    def slow_renewal() -> None:
        # The renewal started, and its answer comes after the lease's safe time ended.
        move_to(clock, lease.safe_until + 1.0)
        assert (
            heartbeat.beat() > clock.monotonic()
        )  # the heartbeat looks meanwhile: it neither expires it nor renews it
        assert recorder.expired == []

    recorder.renew = lambda _: slow_renewal()
    workers.jobs.pop()()


def heartbeat_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the heartbeat said: a lease an earlier test left to the garbage collector may log meanwhile."""
    return [record.getMessage() for record in caplog.records if record.name == "dynalock_django.heartbeat"]


def test_more_leases_than_the_workers_renew_in_a_period_are_warned_about_once_a_minute(clock, caplog):
    caplog.set_level(logging.WARNING, logger="dynalock_django.heartbeat")
    recorder = Recorder(clock, takes=0.010)  # 10 ms a renewal: 2 workers renew 1,000 leases in a 5 s period
    leases = [held_lease(clock, lease_duration=LEASE, key=f"k{index}") for index in range(1500)]
    heartbeat = heartbeat_for(clock, recorder, leases, workers=2)
    clock.advance(PERIOD)

    heartbeat.beat()  # the first renewals measure the round trip

    warnings = heartbeat_warnings(caplog)
    assert len(warnings) == 1
    assert "1500 leases cannot all be renewed every heartbeat period (5s)" in warnings[0]
    assert "10.0 ms a renewal (measured), 2 renewal workers renew about 1000 a period" in warnings[0]
    assert "renewal_workers=5 or more" in warnings[0]  # 1.5 x 1500 x 10 ms / 5 s
    assert "heartbeat_period, 11.5s or more" in warnings[0]  # 1.5 x 1500 x 10 ms / 2 workers, rounded up

    run_until(clock, heartbeat, clock.monotonic() + WARNING_INTERVAL_SECONDS / 2)
    assert len(heartbeat_warnings(caplog)) == 1  # not once per beat
    run_until(clock, heartbeat, clock.monotonic() + WARNING_INTERVAL_SECONDS / 2)
    assert len(heartbeat_warnings(caplog)) == 2  # still true a minute later: said again


def test_no_warning_while_the_workers_keep_up(clock, caplog):
    caplog.set_level(logging.WARNING, logger="dynalock_django.heartbeat")
    recorder = Recorder(clock, takes=0.010)
    leases = [held_lease(clock, lease_duration=LEASE, key=f"k{index}") for index in range(900)]
    heartbeat = heartbeat_for(clock, recorder, leases, workers=2)

    run_until(clock, heartbeat, clock.monotonic() + 3 * PERIOD)

    assert len(recorder.renewed) >= 900
    assert heartbeat_warnings(caplog) == []


def test_asking_for_more_locks_than_can_be_kept_alive_warns_before_any_renewal(clock, caplog):
    caplog.set_level(logging.WARNING, logger="dynalock_django.heartbeat")
    held = [held_lease(clock, lease_duration=LEASE, key=f"k{index}") for index in range(100)]
    heartbeat = heartbeat_for(clock, Recorder(clock), held, workers=1)

    heartbeat.warn_if_too_many(400)  # 500 at the assumed 10 ms: one worker renews 500 in 5 s
    assert heartbeat_warnings(caplog) == []
    heartbeat.warn_if_too_many(401)

    [warning] = heartbeat_warnings(caplog)
    assert warning.startswith("Asked for 401 locks while holding 100: 501 leases cannot all be renewed")
    assert "(assumed, none measured yet)" in warning


def test_the_lag_is_how_late_the_most_overdue_renewal_of_the_last_period_started(clock):
    recorder = Recorder(clock, takes=0.010)
    leases = [held_lease(clock, lease_duration=LEASE, key=f"k{index}") for index in range(300)]
    heard: list[float] = []
    heartbeat = heartbeat_for(clock, recorder, leases, workers=1)
    heartbeat.add_lag_listener(heard.append)
    granted = clock.monotonic()
    assert heartbeat.lag == 0.0

    clock.advance(PERIOD + 2.0)  # the heartbeat looks 2 s late (a paused process)
    run_until(clock, heartbeat, granted + PERIOD + 5.0)

    assert len(heard) == 300
    assert min(heard) == pytest.approx(2.0)
    assert heartbeat.lag == max(heard)
    assert heartbeat.lag == pytest.approx(2.0 + 299 * 0.010)  # one worker: the last waited for 299 renewals
    clock.advance(2 * PERIOD + 10.0)  # two quiet periods later (none renewed late): no lag
    assert heartbeat.lag == 0.0


def test_a_grant_wakes_the_heartbeat_only_when_it_would_look_too_late_for_the_new_lease(clock):
    """Locks taken in turn do not wake the thread for each: one due after its next look waits for that look."""
    recorder, leases, beats = Recorder(clock), [], []
    heartbeat = heartbeat_for(clock, recorder, leases)
    counted_beat = heartbeat.beat
    heartbeat.beat = lambda: beats.append(clock.monotonic()) or counted_beat()  # type: ignore[method-assign]
    first = held_lease(clock, lease_duration=LEASE, key="first")
    leases.append(first)
    first_due = record_of(first).valid_from + PERIOD
    heartbeat.start(first)
    try:
        clock.advance(1.0)  # the thread looked, and waits until the first lease's renewal is due
        looked = len(beats)

        later = held_lease(clock, lease_duration=LEASE, key="later")  # due a second after the first: no wake
        leases.append(later)
        later_due = record_of(later).valid_from + PERIOD
        heartbeat.start(later)
        clock.advance(0.5)
        assert len(beats) == looked

        sooner = held_lease(clock, lease_duration=2.0, key="sooner")  # ends before the thread's next look: woken
        leases.append(sooner)
        heartbeat.start(sooner)
        clock.advance(0.5)
        assert len(beats) == looked + 1
        move_to(clock, later_due + 1.0)
    finally:
        heartbeat.stop(timeout=5.0)

    # Every lease was seen in time: the short one reported lost when its safe time ended (and at every look
    # since: nothing takes it out of this test's list), the others renewed on time.
    assert recorder.expired[0][0] == record_of(sooner).safe_until
    assert dict(zip(recorder.renewed_keys, recorder.renewed, strict=True)) == {"first": first_due, "later": later_due}
