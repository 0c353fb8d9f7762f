"""The virtual clock: time moves when the test says, and every thread due on the way runs, in order."""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator

import pytest

from dynalock_django.dynamodb import ThreadsDidNotSettle, VirtualClock
from dynalock_django.dynamodb import clock as clock_module

pytestmark = pytest.mark.unit


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock(monotonic=100.0, wall=1_000.0)


class Ticker:
    """A thread that wakes every ``period`` seconds of the clock and writes down when."""

    def __init__(self, virtual_clock: VirtualClock, period: float) -> None:
        self.virtual_clock = virtual_clock
        self.period = period
        self.ticks: list[float] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="ticker", daemon=True)

    def _run(self) -> None:
        while not self.virtual_clock.wait(self.stop, self.period):
            self.ticks.append(self.virtual_clock.monotonic())


@pytest.fixture
def ticker(virtual_clock: VirtualClock) -> Iterator[Ticker]:
    running = Ticker(virtual_clock, 1.0)
    virtual_clock.follow(running.thread)  # time waits for it from its start, not from its first wait
    running.thread.start()
    yield running
    running.stop.set()
    running.thread.join(10)


def test_the_clock_stands_still_until_moved(virtual_clock: VirtualClock) -> None:
    assert (virtual_clock.monotonic(), virtual_clock.time()) == (100.0, 1_000.0)
    virtual_clock.advance(2.5)
    assert (virtual_clock.monotonic(), virtual_clock.time()) == (102.5, 1_002.5)


def test_advance_runs_every_wait_that_falls_due_on_the_way_in_order(
    virtual_clock: VirtualClock, ticker: Ticker
) -> None:
    virtual_clock.advance(10.5)
    assert ticker.ticks == [float(t) for t in range(101, 111)]
    assert virtual_clock.monotonic() == 110.5


def test_a_wait_of_the_tests_thread_moves_time_to_its_deadline_letting_the_others_run(
    virtual_clock: VirtualClock, ticker: Ticker
) -> None:
    never = threading.Event()
    assert virtual_clock.wait(never, 30.0) is False
    assert virtual_clock.monotonic() == 130.0
    assert ticker.ticks == [float(t) for t in range(101, 131)]


def test_a_wait_ends_when_another_thread_sets_its_event(virtual_clock: VirtualClock) -> None:
    event = threading.Event()

    def set_three_seconds_later() -> None:
        virtual_clock.wait(threading.Event(), 3.0)
        event.set()

    setter = threading.Thread(target=set_three_seconds_later)
    virtual_clock.follow(setter)
    setter.start()
    assert virtual_clock.wait(event, 10.0) is True
    assert virtual_clock.monotonic() == 103.0


def test_a_wait_of_another_thread_ends_at_its_deadline_only(virtual_clock: VirtualClock) -> None:
    results: list[bool] = []
    waiter = threading.Thread(target=lambda: results.append(virtual_clock.wait(threading.Event(), 5.0)))
    virtual_clock.follow(waiter)
    waiter.start()
    virtual_clock.advance(4.0)
    assert waiter.is_alive()
    virtual_clock.advance(1.0)
    waiter.join(10)
    assert results == [False]


@pytest.mark.parametrize("seconds", [-1.0, math.nan])
def test_time_never_moves_back(virtual_clock: VirtualClock, seconds: float) -> None:
    with pytest.raises(ValueError, match="only moves forward"):
        virtual_clock.advance(seconds)
    assert virtual_clock.monotonic() == 100.0


def test_jump_moves_at_once_and_wakes_who_is_due(virtual_clock: VirtualClock) -> None:
    results: list[bool] = []
    waiter = threading.Thread(target=lambda: results.append(virtual_clock.wait(threading.Event(), 2.0)))
    virtual_clock.follow(waiter)
    waiter.start()
    virtual_clock.advance(0.0)  # it is waiting
    virtual_clock.jump(2.0)
    waiter.join(10)
    assert results == [False]
    assert virtual_clock.monotonic() == 102.0


def test_a_thread_that_has_not_waited_yet_holds_time_still_once_followed(virtual_clock: VirtualClock) -> None:
    started, go = threading.Event(), threading.Event()
    seen: list[float] = []

    def slow_to_wait() -> None:
        started.set()
        go.wait(30)  # not on the virtual_clock: slow start-up
        virtual_clock.wait(threading.Event(), 1.0)
        seen.append(virtual_clock.monotonic())

    late = threading.Thread(target=slow_to_wait)
    virtual_clock.follow(late)
    late.start()
    started.wait(30)
    threading.Timer(0.05, go.set).start()
    virtual_clock.advance(3.0)  # waits for it to reach its wait at 100, then runs it at 101
    late.join(10)
    assert seen == [101.0]


def test_a_thread_stuck_outside_the_clock_is_named_not_waited_for_forever(
    virtual_clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(clock_module, "SETTLE_PATIENCE_SECONDS", 0.05)
    release = threading.Event()

    def waits_then_blocks_elsewhere() -> None:
        virtual_clock.wait(threading.Event(), 1.0)
        release.wait(30)  # not on the virtual_clock

    stuck = threading.Thread(target=waits_then_blocks_elsewhere, name="stuck-worker")
    virtual_clock.follow(stuck)
    stuck.start()
    try:
        with pytest.raises(ThreadsDidNotSettle, match="stuck-worker"):
            virtual_clock.advance(2.0)
    finally:
        release.set()
        stuck.join(10)
