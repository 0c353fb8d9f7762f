"""Leadership and run_while_leader: a named lease held for a process's life."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from dynalock_django import Leadership
from dynalock_django.client import get_client
from dynalock_django.exceptions import LockTimeout
from dynalock_django.leader import EXIT_LEASE_LOST, run_while_leader

from ..dynamodb_support import HEARTBEAT, LEASE, PATIENCE

pytestmark = pytest.mark.uses_dynalock


def test_a_second_leadership_times_out_while_the_first_is_held():
    with Leadership("scheduler") as leader:
        assert leader.is_leader()
        with pytest.raises(LockTimeout):
            Leadership("scheduler", timeout=0.2).acquire()
    assert not leader.is_leader()
    assert get_client().get("scheduler").is_released


def test_a_leader_is_told_when_it_loses(other_holder):
    told = []
    with Leadership("scheduler", on_lost=told.append) as leader:
        other_holder.force_release(other_holder.get("scheduler"), released_by="ops")
        assert leader.lost.wait(PATIENCE)
        assert not leader.is_leader()
    assert told == [leader.lease]


def test_run_while_leader_returns_the_commands_exit_code_and_releases():
    assert run_while_leader("job", [sys.executable, "-c", "raise SystemExit(3)"]) == 3
    assert get_client().get("job").is_released


def test_run_while_leader_with_min_hold_keeps_the_lease_until_then_after_a_short_command(other_holder):
    seen = []

    def look_after_the_command() -> None:
        time.sleep(0.8)  # python -c pass has ended by now, or still runs: the key is held either way
        seen.append(other_holder.get("job"))

    looker = threading.Thread(target=look_after_the_command)
    started = time.monotonic()
    looker.start()
    assert run_while_leader("job", [sys.executable, "-c", "pass"], min_hold=1.5) == 0
    assert time.monotonic() - started >= 1.5  # the runner waited the hold out
    looker.join()
    assert seen[0] is not None
    assert not seen[0].is_released
    assert get_client().get("job").is_released  # then let go, for the next slot


def test_run_while_leader_stops_the_command_soon_after_the_lease_is_lost(other_holder):
    def take_it_away():
        while (held := other_holder.get("job")) is None:
            time.sleep(0.05)
        other_holder.force_release(held, released_by="ops")

    threading.Timer(0.5, take_it_away).start()
    started = time.monotonic()
    code = run_while_leader("job", [sys.executable, "-c", "import time; time.sleep(60)"], grace_period=1)
    assert code == EXIT_LEASE_LOST
    assert time.monotonic() - started < 0.5 + HEARTBEAT + LEASE + 2
