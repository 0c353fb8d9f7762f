"""Fixtures of the protocol's tests."""

from __future__ import annotations

import pytest

from dynalock_django.dynamodb import VirtualClock

from .fake_clock import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    """A clock that moves only when the test says (``clock.advance(seconds)``), for the timing rules' unit tests."""
    return FakeClock()


@pytest.fixture
def virtual_clock() -> VirtualClock:
    """The clock that the protocol's own threads wait on too: time moves when the test moves it."""
    return VirtualClock(monotonic=100.0, wall=1_000.0)
