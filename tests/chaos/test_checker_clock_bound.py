"""The checker's clock-bound properties: late waiters take a dead holder's lock without watching it for a
lease, and the beyond-the-bound control counts overlaps without failing them, but still fails a write the
fence let through."""

from __future__ import annotations

import pytest

from .checker import ClockBound
from .test_checker import ev, held, properties

BOUND = ClockBound(lease=1.0, max_clock_skew=0.5)
SHOWN = "a waiter arrives after a killed holder's bound: the run shows the clock-bound rule"


def killed_then_taken(arrival, granted, watched=0.01):
    taken = held("b", granted, granted + 0.1, 2)
    taken[0].data["watched"] = watched
    return [
        ev(0.0, "a", "acquired", "k", 1, safe_until=1.0),
        ev(0.2, "a", "killed", worker="a"),
        ev(arrival, "b", "acquire_start", "k", timeout=5.0),
        *taken,
    ]


def test_a_waiter_arriving_after_the_bound_that_gets_the_lock_at_once_passes():
    verdict, failed = properties(killed_then_taken(2.5, 2.55), clock_bound=BOUND)
    assert failed == set()
    assert verdict.late_takeovers == [(pytest.approx(2.3), pytest.approx(0.05))]


def test_a_late_waiter_that_watched_the_holding_for_a_lease_fails():
    _, failed = properties(killed_then_taken(2.5, 3.6, watched=1.05), clock_bound=BOUND)
    assert (
        "a waiter arriving after the bound takes the lock without watching its holding for a lease (watched 1.05 s)"
        in failed
    )


def test_a_late_waiter_that_took_over_at_sight_passes_however_slowly_the_machine_ran():
    """A loaded machine: its requests took over a lease of wall time, yet it never watched for the rule."""
    verdict, failed = properties(killed_then_taken(2.5, 4.0, watched=0.02), clock_bound=BOUND)
    assert failed == set()
    assert verdict.late_takeovers == [(pytest.approx(2.3), pytest.approx(1.5))]


def test_a_run_without_a_waiter_arriving_after_the_bound_shows_nothing_and_fails():
    _, failed = properties(killed_then_taken(1.5, 2.2), clock_bound=BOUND)  # arrived before kill + 2 s
    assert failed == {SHOWN}
    _, failed = properties(held("a", 0, 0.5, 1), clock_bound=BOUND)
    assert failed == {SHOWN}


def test_beyond_the_bound_overlaps_are_counted_not_failed():
    verdict, failed = properties([*held("a", 0, 0.5, 1), *held("b", 0.4, 0.9, 2)], overlaps_allowed=True)
    assert failed == set()
    assert verdict.overlaps == 1


def test_beyond_the_bound_a_write_the_fence_let_through_still_fails():
    stale_write = [ev(0.5, "b", "claimed", "k", 2), ev(0.9, "a", "write_ok", "k", 1, value=1)]
    _, failed = properties([*held("a", 0, 1.0, 1), *held("b", 0.4, 1.2, 2), *stale_write], overlaps_allowed=True)
    assert "a write after a newer holder claimed the row is rejected by the fence" in failed
