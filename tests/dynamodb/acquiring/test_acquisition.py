"""An acquire's decisions on a fake clock, without I/O: what it sends next, how long it waits, when it takes over."""

from __future__ import annotations

import dataclasses

import pytest

from dynalock_django.dynamodb import DynamoDBUnavailable, LockInfo
from dynalock_django.dynamodb.acquiring.line_seats import LineTiming, Seat
from dynalock_django.dynamodb.acquiring.observations import Observations
from dynalock_django.dynamodb.acquiring.plan import (
    MAX_UNANSWERED,
    Acquisition,
    Join,
    Read,
    UnansweredWrites,
    Write,
)
from dynalock_django.dynamodb.clock import FIRST_POLL_SECONDS, Instant
from dynalock_django.dynamodb.wire.waiters import entry

from ..clocks import TICK

pytestmark = pytest.mark.unit

LOCK = ("k", None)
REFRESH = 1.0


def item(version: str = "v1", *, lease: float = 20.0, released: bool = False, owner: str = "them") -> LockInfo:
    return LockInfo(
        key="k",
        sort_key=None,
        owner_name=owner,
        lease_duration=lease,
        record_version_number=version,
        fencing_token=7,
        data=None,
        is_released=released,
        acquired_at=None,
        renewed_at=None,
        released_by=None,
        raw_version={"S": version},
    )


@pytest.fixture
def observations():
    return Observations()


def plan(observations, *, deadline=None, jitter=lambda low, high: high):
    return Acquisition(LOCK, observations, refresh_period=REFRESH, deadline=deadline, jitter=jitter)


def test_the_first_step_is_a_write_that_takes_over_nothing(clock, observations):
    step = plan(observations).next_step(clock.monotonic())
    assert step == Write(observed=None, may_take_over=False, unanswered=())


def test_a_held_lock_is_read_until_its_version_has_stood_a_whole_lease_then_taken_over(clock, observations):
    acquisition = plan(observations)
    acquisition.found(item("v1", lease=20.0), Instant.read(clock))
    assert acquisition.holder == item("v1")

    clock.advance(20.0 - TICK)
    assert acquisition.next_step(clock.monotonic()) == Read()
    acquisition.found(item("v1", lease=20.0), Instant.read(clock))  # the same version, still standing
    clock.advance(TICK)

    assert acquisition.next_step(clock.monotonic()) == Write(observed=item("v1"), may_take_over=True, unanswered=())


def test_a_new_version_restarts_the_takeover_clock(clock, observations):
    acquisition = plan(observations)
    acquisition.found(item("v1"), Instant.read(clock))
    clock.advance(15.0)
    acquisition.found(item("v2"), Instant.read(clock))  # the holder renewed
    clock.advance(15.0)
    assert acquisition.next_step(clock.monotonic()) == Read()
    clock.advance(5.0)
    assert acquisition.next_step(clock.monotonic()).may_take_over


def test_takeover_waits_for_the_items_own_lease_not_ours(clock, observations):
    acquisition = plan(observations)
    acquisition.found(item("v1", lease=60.0), Instant.read(clock))
    clock.advance(59.0)
    assert acquisition.next_step(clock.monotonic()) == Read()
    clock.advance(1.0)
    assert acquisition.next_step(clock.monotonic()).may_take_over


def test_a_lock_found_free_is_written_at_once_but_only_once_in_a_row(clock, observations):
    acquisition = plan(observations)
    acquisition.found(None, Instant.read(clock))  # no item: released and deleted in between
    assert acquisition.retry_at_once
    assert acquisition.delay(clock.monotonic()) == 0.0
    assert isinstance(acquisition.next_step(clock.monotonic()), Write)
    acquisition.found(item("v1", released=True), Instant.read(clock))
    assert acquisition.delay(clock.monotonic()) > 0.0
    assert isinstance(acquisition.next_step(clock.monotonic()), Write)


def test_polls_back_off_from_the_first_poll_doubling_up_to_the_refresh_period(clock, observations):
    acquisition = plan(observations)
    delays = []
    for _ in range(8):
        acquisition.found(item("v1", lease=1000.0), Instant.read(clock))
        delays.append(acquisition.delay(clock.monotonic()))
    assert delays == [FIRST_POLL_SECONDS * 2**n for n in range(1, 6)] + [REFRESH] * 3


def test_poll_delays_are_jittered_between_half_and_all(clock, observations):
    asked = []
    acquisition = plan(observations, jitter=lambda low, high: asked.append((low, high)) or low)
    acquisition.found(item("v1"), Instant.read(clock))
    assert acquisition.delay(clock.monotonic()) == FIRST_POLL_SECONDS * 2 * 0.5
    assert asked == [(0.5, 1.0)]


def test_a_waiter_wakes_when_the_holders_version_will_have_stood_its_lease(clock, observations):
    acquisition = plan(observations)
    for _ in range(6):
        acquisition.found(item("v1", lease=2.0), Instant.read(clock))  # backed off to the refresh period
    clock.advance(1.5)
    assert acquisition.delay(clock.monotonic()) == pytest.approx(0.5 + 0.001)


def test_the_wait_never_passes_the_deadline_and_ends_there(clock, observations):
    acquisition = plan(observations, deadline=clock.monotonic() + 0.5)
    for _ in range(6):
        acquisition.found(item("v1"), Instant.read(clock))
    clock.advance(0.2)
    assert acquisition.delay(clock.monotonic()) == pytest.approx(0.3)
    clock.advance(0.3)
    assert acquisition.delay(clock.monotonic()) is None


def test_without_a_deadline_it_waits_as_long_as_it_takes(clock, observations):
    acquisition = plan(observations)
    acquisition.found(item("v1"), Instant.read(clock))
    clock.advance(10_000.0)
    assert acquisition.delay(clock.monotonic()) is not None


def test_after_a_failure_it_reads_unless_a_write_of_ours_may_have_landed(clock, observations):
    acquisition = plan(observations)
    acquisition.found(item("v1"), Instant.read(clock))
    acquisition.failed(DynamoDBUnavailable("throttled"))
    assert acquisition.next_step(clock.monotonic()) == Read()
    assert acquisition.delay(clock.monotonic()) > 0.0  # a failure is never retried at once

    acquisition.unanswered.add("mine", clock.monotonic())
    acquisition.failed(DynamoDBUnavailable("answer lost"))
    assert acquisition.next_step(clock.monotonic()) == Write(
        observed=item("v1"), may_take_over=False, unanswered=("mine",)
    )


def test_a_failure_before_anything_was_observed_writes_again_without_taking_over(clock, observations):
    acquisition = plan(observations)
    acquisition.failed(DynamoDBUnavailable("throttled"))
    assert acquisition.error is not None
    assert acquisition.next_step(clock.monotonic()) == Write(observed=None, may_take_over=False, unanswered=())


def test_a_success_clears_the_last_error(clock, observations):
    acquisition = plan(observations)
    acquisition.failed(DynamoDBUnavailable("throttled"))
    acquisition.found(item("v1"), Instant.read(clock))
    assert acquisition.error is None


def test_a_released_item_is_free_and_not_remembered_unless_its_token_must_be_overwritten(clock, observations):
    assert not observations.saw(LOCK, item("v1", released=True), Instant.read(clock))
    assert observations.get(LOCK) is None
    bad = item("v2", released=True)
    bad = LockInfo(**{**bad.__dict__, "fencing_token": None, "bad_fencing_token": True})
    assert not observations.saw(LOCK, bad, Instant.read(clock))
    assert observations.get(LOCK).info == bad


def test_available_in_is_the_takeover_rule_seen_from_outside(clock, observations):
    lock = item("v1", lease=20.0)
    assert observations.takeover_in(None, Instant.read(clock)) == 0.0
    assert observations.takeover_in(item(released=True), Instant.read(clock)) == 0.0
    assert observations.takeover_in(lock, Instant.read(clock)) == 20.0  # never seen: a whole lease
    observations.saw(LOCK, lock, Instant.read(clock))
    clock.advance(12.5)
    assert observations.takeover_in(lock, Instant.read(clock)) == 7.5
    clock.advance(10.0)
    assert observations.takeover_in(lock, Instant.read(clock)) == 0.0
    assert observations.takeover_in(item("v2"), Instant.read(clock)) == 20.0  # renewed since: counts again


def test_observations_are_bounded_and_forget_the_least_recently_seen(clock):
    observations = Observations(max_size=5)
    for n in range(8):
        observations.saw((f"k{n}", None), item(f"v{n}"), Instant.read(clock))
    assert len(observations) == 5
    assert observations.get(("k2", None)) is None
    assert observations.get(("k3", None)) is not None


def test_an_unanswered_write_that_landed_is_ours_from_when_it_started(clock):
    unanswered = UnansweredWrites()
    unanswered.add("mine", 100.0)
    assert unanswered.landed_in(item("other", owner="me"), "me") is None
    assert unanswered.landed_in(item("mine", owner="someone else"), "me") is None
    assert unanswered.landed_in(item("mine", owner="me"), "me") == 100.0
    assert not unanswered  # answered now


def test_lost_answers_stay_few_past_the_cap_the_lock_is_read_first(clock, observations):
    acquisition = plan(observations)
    for n in range(MAX_UNANSWERED):
        step = acquisition.next_step(clock.monotonic())
        assert isinstance(step, Write)
        assert len(step.unanswered) == n  # each write's condition accepts the versions lost before it
        acquisition.unanswered.add(f"mine-{n}", clock.monotonic())
        acquisition.failed(DynamoDBUnavailable("answer lost"))
    assert acquisition.next_step(clock.monotonic()) == Read()


def test_a_read_showing_one_of_ours_keeps_that_version_only_and_writes_again(clock, observations):
    acquisition = plan(observations)
    for n in range(MAX_UNANSWERED):
        acquisition.unanswered.add(f"mine-{n}", clock.monotonic())
    acquisition.found(item("mine-2", owner="me"), Instant.read(clock))
    assert tuple(acquisition.unanswered) == ("mine-2",)
    assert acquisition.next_step(clock.monotonic()) == Write(observed=None, may_take_over=False, unanswered=("mine-2",))
    assert acquisition.delay(clock.monotonic()) == 0.0


def test_an_answer_showing_none_of_ours_forgets_them_all(clock, observations):
    acquisition = plan(observations)
    for n in range(MAX_UNANSWERED):
        acquisition.unanswered.add(f"mine-{n}", clock.monotonic())
    acquisition.found(item("theirs"), Instant.read(clock))
    assert not acquisition.unanswered
    assert acquisition.next_step(clock.monotonic()) == Read()  # held by them, not ours to take yet


def test_a_join_written_that_still_shows_us_out_of_line_is_not_sent_again_at_once(clock, observations):
    """A line that reads us out of it right after our join landed (a line others wrote otherwise): the next join
    waits for the next look, and never makes a loop of writes."""
    timing = LineTiming.for_refresh_period(REFRESH)
    seat = Seat("me")
    acquisition = Acquisition(
        LOCK,
        observations,
        refresh_period=REFRESH,
        deadline=None,
        jitter=lambda low, high: high,
        seat=seat,
        timing=timing,
    )
    acquisition.found(item("v1"), Instant.read(clock))
    assert isinstance(acquisition.next_step(clock.monotonic()), Join)
    assert acquisition.delay(clock.monotonic()) == 0.0  # found held, out of line: join at once
    ours_seen_long_ago = {"M": {seat.waiter_id: entry("me", 0, timing.window)}}
    answer = dataclasses.replace(item("v1"), raw_line=ours_seen_long_ago)
    acquisition.wrote_line(answer, Instant.read(clock), True, clock.monotonic())
    assert isinstance(acquisition.next_step(clock.monotonic()), Join)
    assert acquisition.delay(clock.monotonic()) == timing.line_look
