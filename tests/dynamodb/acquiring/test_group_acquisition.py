"""acquire_many's decisions on a fake clock, without I/O: which keys to read, when to write all, how long to wait."""

from __future__ import annotations

import dataclasses

import pytest

from dynalock_django.dynamodb import DynamoDBUnavailable
from dynalock_django.dynamodb.acquiring.group_plan import GroupAcquisition, sorted_lock_ids
from dynalock_django.dynamodb.acquiring.observations import Observations
from dynalock_django.dynamodb.acquiring.plan import Write
from dynalock_django.dynamodb.clock import FIRST_POLL_SECONDS, Instant

from ..clocks import TICK
from .test_acquisition import REFRESH, item

pytestmark = pytest.mark.unit

LEASE = 20.0


def held(key: str, version: str = "v1"):
    return dataclasses.replace(item(version, lease=LEASE), key=key)


def group(keys, *, deadline=None, observations=None):
    return GroupAcquisition(
        [(key, None) for key in keys],
        observations or Observations(),
        refresh_period=REFRESH,
        deadline=deadline,
        jitter=lambda low, high: high,
    )


def test_keys_are_sorted_and_cut_into_chunks_of_100():
    plan = group([f"k{i:03d}" for i in reversed(range(250))])
    assert plan.lock_ids == sorted_lock_ids(plan.lock_ids) == [(f"k{i:03d}", None) for i in range(250)]
    assert [len(chunk) for chunk in plan.chunks] == [100, 100, 50]
    assert plan.chunks[1][0] == ("k100", None)


def test_at_first_nothing_is_read_and_every_key_is_written(clock):
    plan = group(["b", "a"])
    assert plan.to_read(clock.monotonic()) == []
    assert plan.writes(plan.chunks[0], clock.monotonic()) == [Write(None, False, ())] * 2


def test_only_the_held_key_is_read_until_its_holder_has_stood_still_for_a_whole_lease(clock):
    plan = group(["a", "b", "c"])
    plan.new_round()
    plan.found(("b", None), held("b"), Instant.read(clock))
    assert plan.to_read(clock.monotonic()) == [("b", None)]
    assert plan.holders() == {("b", None): held("b")}
    clock.advance(LEASE - TICK)
    plan.found(("b", None), held("b"), Instant.read(clock))  # the same version, still
    assert plan.to_read(clock.monotonic()) == [("b", None)]
    clock.advance(TICK)
    assert plan.to_read(clock.monotonic()) == []  # dead: taken over in the next transaction, with the others
    steps = plan.writes(plan.chunks[0], clock.monotonic())
    assert [step.may_take_over for step in steps] == [False, True, False]
    assert steps[1].observed == held("b")


def test_a_holder_that_renews_is_never_taken_over(clock):
    plan = group(["a", "b"])
    for renewal in range(5):
        plan.new_round()
        plan.found(("b", None), held("b", f"v{renewal}"), Instant.read(clock))
        clock.advance(LEASE / 2)
        assert plan.to_read(clock.monotonic()) == [("b", None)]


def test_the_wait_is_paced_by_the_keys_in_the_way_and_ends_at_the_deadline(clock):
    plan = group(["a", "b"], deadline=clock.monotonic() + 0.5)
    plan.new_round()
    assert plan.delay(clock.monotonic()) == FIRST_POLL_SECONDS  # a conflict, nothing held: a short pause
    plan.found(("a", None), held("a"), Instant.read(clock))
    assert plan.delay(clock.monotonic()) == pytest.approx(FIRST_POLL_SECONDS * 2)  # a's own backoff
    clock.advance(0.5)
    assert plan.delay(clock.monotonic()) is None


def test_a_key_found_free_on_reading_does_not_stand_in_the_way(clock):
    plan = group(["a", "b"])
    plan.new_round()
    plan.found(("a", None), held("a"), Instant.read(clock))
    plan.new_round()
    plan.found(("a", None), None, Instant.read(clock))
    assert plan.holders() == {}
    assert plan.to_read(clock.monotonic()) == []


def test_a_failed_chunk_backs_off_and_keeps_its_unanswered_versions(clock):
    plan = group(["a", "b"])
    plan.new_round()
    plan.plans[("a", None)].unanswered.add("mine", clock.monotonic())
    error = DynamoDBUnavailable("down")
    plan.failed(plan.chunks[0], error)
    assert plan.error is error
    assert plan.delay(clock.monotonic()) == pytest.approx(FIRST_POLL_SECONDS * 2)
    steps = plan.writes([("a", None)], clock.monotonic())
    assert steps[0].unanswered == ("mine",)  # the next write's condition accepts what may have landed


def test_a_key_held_by_another_thread_at_the_deadline_is_named(clock):
    plan = group(["a", "b"])
    plan.held_locally(("b", None), held("b"))
    assert plan.holders() == {("b", None): held("b")}
