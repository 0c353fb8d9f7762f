"""Fixtures of the protocol's tests."""

from __future__ import annotations

import pytest

from dynalock_django.dynamodb import VirtualClock


@pytest.fixture
def clock() -> VirtualClock:
    """A clock that moves only when the test says (``clock.advance(seconds)``), for the timing rules' unit tests;
    the protocol's own threads wait on it too, so a rule is asserted on time, never on the machine's speed."""
    return VirtualClock()


@pytest.fixture
def virtual_clock() -> VirtualClock:
    """The clock that the protocol's own threads wait on too: time moves when the test moves it."""
    return VirtualClock(monotonic=100.0, wall=1_000.0)
