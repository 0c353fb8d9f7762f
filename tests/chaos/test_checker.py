"""The checker fails the histories it must fail: each property, on a history that breaks it."""

from __future__ import annotations

import pytest

from .checker import BROWNOUT_SLACK_SECONDS, check
from .history import Event

HB, REFRESH = 0.25, 0.1


def ev(t, who, kind, key="k", token=None, **data):
    return Event(t, who, kind, key, token, data)


def held(worker, start, end, token, key="k", safe_for=1.0):
    return [
        ev(start, worker, "acquired", key, token, safe_until=start + safe_for),
        ev(end, worker, "release_start", key, token, safe_until=start + safe_for),
        ev(end + 0.01, worker, "released", key, token),
    ]


def properties(events, **options):
    verdict = check(sorted(events, key=lambda e: e.t), heartbeat=HB, refresh=REFRESH, **options)
    return verdict, {prop for prop, _ in verdict.violations}


def test_a_clean_history_passes_and_times_the_handoff_to_a_waiter():
    waiting = ev(0.2, "b", "acquire_start", "k", timeout=5.0)
    verdict, failed = properties([*held("a", 0, 0.5, 1), waiting, *held("b", 0.6, 0.9, 2), *held("c", 2, 2.1, 3)])
    assert failed == set()
    assert verdict.operations == 3
    assert verdict.handoffs == [pytest.approx(0.09)]  # c was not waiting: not a handoff


def test_overlapping_holders_fail():
    verdict, failed = properties([*held("a", 0, 0.5, 1), *held("b", 0.4, 0.9, 2)])
    assert "no two holders overlap" in failed
    assert verdict.overlaps == 1


def test_a_holding_ends_at_its_safe_time_even_if_the_holder_released_later():
    # a's lease ran out at 0.3 (safe_for), b took over at 0.4: no overlap
    _, failed = properties([*held("a", 0, 0.8, 1, safe_for=0.3), *held("b", 0.4, 0.9, 2)])
    assert failed == set()


def test_a_killed_holder_holds_nothing_after_the_kill():
    events = [
        ev(0, "a", "acquired", "k", 1, safe_until=1.0),
        ev(0.05, "b", "acquire_start", "k", timeout=5.0),
        ev(0.1, "runner", "killed", worker="a"),
        *held("b", 1.1, 1.2, 2),
    ]
    verdict, failed = properties(events)
    assert failed == set()
    assert verdict.takeovers == [1.1 - 0.1]


def test_a_stale_write_accepted_after_a_newer_claim_fails():
    events = [
        ev(0.1, "a", "claimed", "k", 1),
        ev(0.5, "b", "claimed", "k", 2),
        ev(0.6, "b", "write_ok", "k", 2, value=1),
        ev(0.9, "a", "write_ok", "k", 1, value=2),
    ]
    verdict, failed = properties(events)
    assert verdict.stale_writes_accepted == 1
    assert "a write after a newer holder claimed the row is rejected by the fence" in failed
    assert "accepted tokens strictly increase" in failed


def test_the_unfenced_control_reports_instead_of_failing():
    events = [
        ev(0.1, "a", "claimed", "k", 1),
        ev(0.5, "b", "claimed", "k", 2),
        ev(0.6, "b", "write_ok", "k", 2, value=1),
        ev(0.9, "a", "write_ok", "k", 1, value=1),
        ev(1.0, "runner", "final_counter", "k", value=1),
    ]
    verdict, failed = properties(events, control=True)
    assert failed == set()
    assert (verdict.stale_writes_accepted, verdict.lost_updates) == (1, 1)


def test_lost_and_phantom_updates_fail():
    acked = [ev(0.1 * i, "a", "write_ok", "k", i, value=i) for i in range(1, 4)]
    _, lost = properties([*acked, ev(1, "runner", "final_counter", "k", value=2)])
    _, phantom = properties([*acked, ev(1, "runner", "final_counter", "k", value=5)])
    assert any(p.startswith("counter k") for p in lost)
    assert any(p.startswith("counter k") for p in phantom)


def test_an_unknown_write_outcome_may_or_may_not_have_counted():
    events = [
        ev(0.1, "a", "write_ok", "k", 1, value=1),
        ev(0.2, "b", "write_attempt", "k", 2),  # killed mid-write
        ev(1, "runner", "final_counter", "k", value=2),
    ]
    _, failed = properties(events)
    assert failed == set()


def test_a_paused_holder_taken_over_must_be_told_soon_after_resuming():
    pause = [
        ev(0, "a", "acquired", "k", 1, safe_until=1.0),
        ev(0.1, "a", "paused", "k", 1, worker="a"),
        *held("b", 1.2, 1.5, 2),
        ev(2.0, "runner", "resumed", worker="a", lease=1.0),
    ]
    _, told_late = properties([*pause, ev(2.9, "a", "lost_reported", "k", 1)])
    _, told_in_time = properties([*pause, ev(2.1, "a", "lost_reported", "k", 1)])
    assert "a lease taken over while its holder was paused is reported within a heartbeat of resuming" in told_late
    assert told_in_time == set()


def test_a_paused_holder_killed_before_its_heartbeat_could_tell_it_owes_no_report():
    """Seed 5's history: resumed, its fenced write refused, SIGKILLed 1 ms later: nothing unsafe happened."""
    pause = [
        ev(0, "a", "acquired", "k", 1, safe_until=1.0),
        ev(0.1, "a", "paused", "k", 1, worker="a"),
        *held("b", 1.2, 1.5, 2),
        ev(2.0, "runner", "resumed", worker="a", lease=1.0),
        ev(2.0005, "a", "write_rejected", "k", 1),
    ]
    _, killed_at_once = properties([*pause, ev(2.001, "a", "killed", worker="a")])
    _, killed_past_its_heartbeat = properties([*pause, ev(2.0 + HB + 1.0, "a", "killed", worker="a")])
    assert killed_at_once == set()
    # Alive a heartbeat (and the slack) past its resume, it owed the report still.
    assert (
        "a lease taken over while its holder was paused is reported within a heartbeat of resuming"
        in killed_past_its_heartbeat
    )


def test_waiting_past_the_timeout_fails():
    events = [ev(0, "a", "acquire_start", "k", timeout=1.0), ev(3.0, "a", "acquire_failed", "k")]
    _, failed = properties(events)
    assert "nobody waits longer than its timeout plus a refresh period" in failed


def test_in_a_brownout_waiting_past_the_timeout_and_one_read_time_out_fails():
    def waited(seconds):
        return [ev(0, "a", "acquire_start", "k", timeout=1.0), ev(seconds, "a", "acquire_failed", "k")]

    verdict, late = properties(waited(1.0 + 0.5 + BROWNOUT_SLACK_SECONDS + 0.1), read_timeout=0.5)
    _, in_time = properties(waited(1.0 + 0.5 + BROWNOUT_SLACK_SECONDS - 0.1), read_timeout=0.5)
    assert "nobody waits longer than its timeout plus one read time-out" in late
    assert verdict.worst_wait_past_timeout == pytest.approx(0.5 + BROWNOUT_SLACK_SECONDS + 0.1)
    assert in_time == set()
