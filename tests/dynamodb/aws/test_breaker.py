"""The circuit breaker's rules on a fake clock: when it opens, how long it stays open, the one probe."""

from __future__ import annotations

import pytest

from dynalock_django.dynamodb import CircuitOpen, VirtualClock
from dynalock_django.dynamodb.aws.breaker import CircuitBreaker

from ..clocks import TICK

pytestmark = pytest.mark.unit

LOST = ConnectionError("no answer")


def failing(breaker: CircuitBreaker, times: int) -> None:
    for _ in range(times):
        probe = breaker.before_call()
        breaker.unanswered(LOST, probe=probe)


def test_it_opens_after_threshold_calls_in_a_row_without_an_answer():
    breaker = CircuitBreaker(VirtualClock(), threshold=3, cool_down=5.0)
    failing(breaker, 2)
    assert breaker.before_call() is False  # still closed: a call goes out
    breaker.unanswered(LOST, probe=False)
    with pytest.raises(CircuitOpen) as caught:
        breaker.before_call()
    assert caught.value.retry_after == pytest.approx(5.0)
    assert caught.value.original is LOST


def test_an_answer_resets_the_count():
    breaker = CircuitBreaker(VirtualClock(), threshold=3, cool_down=5.0)
    failing(breaker, 2)
    breaker.answered(probe=breaker.before_call())
    failing(breaker, 2)
    assert breaker.before_call() is False


def test_after_the_cool_down_one_probe_goes_and_the_others_still_fail_at_once():
    clock = VirtualClock()
    breaker = CircuitBreaker(clock, threshold=1, cool_down=5.0)
    failing(breaker, 1)
    clock.advance(5.0 - TICK)
    with pytest.raises(CircuitOpen):
        breaker.before_call()
    clock.advance(TICK)
    assert breaker.before_call() is True  # the probe
    with pytest.raises(CircuitOpen):
        breaker.before_call()  # one probe at a time
    breaker.answered(probe=True)
    assert breaker.before_call() is False
    assert not breaker.is_open


def test_a_failed_probe_opens_it_for_another_cool_down():
    clock = VirtualClock()
    breaker = CircuitBreaker(clock, threshold=3, cool_down=5.0)
    failing(breaker, 3)
    clock.advance(5.0)
    breaker.unanswered(LOST, probe=breaker.before_call())
    clock.advance(5.0 - TICK)
    with pytest.raises(CircuitOpen):
        breaker.before_call()
    clock.advance(TICK)
    assert breaker.before_call() is True


def test_a_probe_that_ended_without_telling_leaves_its_place_to_the_next_call():
    clock = VirtualClock()
    breaker = CircuitBreaker(clock, threshold=1, cool_down=1.0)
    failing(breaker, 1)
    clock.advance(1.0)
    breaker.finished(probe=breaker.before_call())
    assert breaker.before_call() is True


def test_renewals_are_never_refused_and_their_answer_closes_it():
    breaker = CircuitBreaker(VirtualClock(), threshold=1, cool_down=60.0)
    failing(breaker, 1)
    assert breaker.before_call(always=True) is False
    breaker.answered(probe=False)
    assert breaker.before_call() is False


def test_without_a_threshold_it_never_opens():
    breaker = CircuitBreaker(VirtualClock(), threshold=None, cool_down=5.0)
    failing(breaker, 100)
    assert breaker.before_call() is False


def test_it_says_once_when_it_opens_and_once_when_it_closes(caplog):
    """One WARNING line per change, with the last failure escaped; none while it stays as it is."""
    clock = VirtualClock()
    breaker = CircuitBreaker(clock, threshold=2, cool_down=5.0)
    with caplog.at_level("WARNING", logger="dynalock_django.breaker"):
        failing(breaker, 1)
        assert caplog.messages == []  # one call without an answer is no outage yet
        breaker.unanswered(ConnectionError("no answer\x1b[2J"), probe=breaker.before_call())
        breaker.unanswered(LOST, probe=False)  # a call already under way when it opened: no second line
        clock.advance(5.0 + TICK)
        breaker.unanswered(LOST, probe=breaker.before_call())  # a failed probe: open again, not news
        clock.advance(5.0 + TICK)
        breaker.answered(probe=breaker.before_call())
        breaker.answered(probe=False)
    opened, closed = caplog.messages
    assert "did not answer 2 calls in a row" in opened
    assert "\x1b" not in opened
    assert "circuit breaker is closed" in closed
