"""``manage.py dynalock run`` as real processes: its command never runs without the lease.

Each command is a script that writes a line per tick (who, pid, fencing token, the monotonic
clock, which all processes of the machine share) to a file of its own: a command that runs on
after its runner died shows up as ticks after the next command's first.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dynalock_django.client import get_client
from dynalock_django.locks import lock_key
from dynalock_django.supervised import FENCING_TOKEN_ENV

from ..dynamodb_support import HEARTBEAT, LEASE, PATIENCE
from .processes import ROOT, is_running, manage_py_environment, wait_for

pytestmark = pytest.mark.uses_dynalock

NIGHTLY = lock_key("nightly").key

TICKER = f"""
import os, pathlib, signal, sys, time
name, path, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
def terminated(signum, frame):
    pathlib.Path(path + ".terminated").touch()
    sys.exit(0)
signal.signal(signal.SIGTERM, terminated)
end = time.monotonic() + seconds
with open(path, "a") as ticks:
    while True:
        ticks.write(f"{{name}} {{os.getpid()}} {{os.environ['{FENCING_TOKEN_ENV}']}} {{time.monotonic()}}\\n")
        ticks.flush()
        if time.monotonic() >= end:
            break
        time.sleep(0.02)
"""


@pytest.fixture
def ticker(tmp_path):
    path = tmp_path / "ticker.py"
    path.write_text(TICKER)
    return path


# A runner's start and end (Django's, under coverage on a loaded machine) may be slow: waiting longer is never unsafe.
STARTED = 4 * PATIENCE


@pytest.fixture
def start_runner():
    """Start ``manage.py dynalock run NAME -- command``; every runner still running is killed after the test."""
    runners = []

    def start(env, name, *command):
        runner = subprocess.Popen(
            [sys.executable, "manage.py", "dynalock", "run", name, "--timeout", "60", "--", *command],
            cwd=ROOT,
            env=env,
        )
        runners.append(runner)
        return runner

    yield start
    for runner in runners:
        runner.kill()
        runner.wait()


def ticks(path):
    """(pid, fencing token, monotonic time) of every tick written to ``path``."""
    if not path.exists():
        return []
    lines = [line.split() for line in path.read_text().splitlines() if line.count(" ") == 3]
    return [(int(pid), int(token), float(at)) for _, pid, token, at in lines]


@pytest.mark.parametrize("max_clock_skew", [None, "0"], ids=["clock-free", "max_clock_skew=0"])
def test_sigkill_of_the_runner_kills_its_command_before_anyone_else_can_start_theirs(
    dynalock, start_runner, ticker, tmp_path, max_clock_skew
):
    extra = {} if max_clock_skew is None else {"DYNALOCK_MAX_CLOCK_SKEW": max_clock_skew}
    env = manage_py_environment(dynalock, "testproject.settings", **extra)
    first, second = tmp_path / "a.ticks", tmp_path / "b.ticks"
    runner_a = start_runner(env, "nightly", sys.executable, str(ticker), "a", str(first), "25")
    wait_for(lambda: ticks(first), STARTED)
    runner_b = start_runner(env, "nightly", sys.executable, str(ticker), "b", str(second), "0.5")
    time.sleep(2 * HEARTBEAT)  # b is waiting: a keeps renewing
    assert not ticks(second)

    runner_a.send_signal(signal.SIGKILL)
    runner_a.wait()
    assert runner_b.wait(timeout=10 * LEASE + STARTED) == 0

    a_ticks, b_ticks = ticks(first), ticks(second)
    assert b_ticks, "the next runner's command never ran"
    assert max(at for _, _, at in a_ticks) < min(at for _, _, at in b_ticks)  # never both at once
    assert not is_running(a_ticks[0][0])  # the orphan is gone, not just quiet
    assert b_ticks[0][1] > a_ticks[0][1]  # each command was told its own, increasing, token


def start_with_a_background_child(dynalock, start_runner, ticker, tmp_path):
    """A runner whose command (a shell) leaves one ticker in the background and becomes another; both ticking."""
    env = manage_py_environment(dynalock, "testproject.settings")
    foreground, background = tmp_path / "fg.ticks", tmp_path / "bg.ticks"
    script = f"{sys.executable} {ticker} bg {background} 60 & exec {sys.executable} {ticker} fg {foreground} 60"
    runner = start_runner(env, "nightly", "sh", "-c", script)
    wait_for(lambda: ticks(foreground) and ticks(background), STARTED)
    return runner, foreground, background


def test_sigkill_of_the_runner_kills_what_its_command_started_in_the_background_too(
    dynalock, start_runner, ticker, tmp_path
):
    runner, foreground, background = start_with_a_background_child(dynalock, start_runner, ticker, tmp_path)

    runner.send_signal(signal.SIGKILL)
    runner.wait()
    killed = time.monotonic()

    # Both gone well within the lease that must pass before anyone else may start: the background one
    # (no parent-death signal of its own) by the group's sentinel.
    wait_for(lambda: not is_running(ticks(background)[0][0]) and not is_running(ticks(foreground)[0][0]), LEASE)
    assert max(at for _, _, at in ticks(background)) < killed + LEASE


def test_sigterm_to_the_runner_stops_the_commands_whole_group_then_releases(dynalock, start_runner, ticker, tmp_path):
    runner, foreground, background = start_with_a_background_child(dynalock, start_runner, ticker, tmp_path)

    runner.send_signal(signal.SIGTERM)

    assert runner.wait(timeout=STARTED) == 128 + signal.SIGTERM
    assert get_client().get(NIGHTLY).is_released
    for path in (foreground, background):
        assert not is_running(ticks(path)[0][0])
        assert Path(f"{path}.terminated").exists()  # each was asked to stop before anything was killed


def test_what_the_command_leaves_behind_in_its_group_is_killed_before_the_lease_is_released(
    dynalock, start_runner, ticker, tmp_path
):
    env = manage_py_environment(dynalock, "testproject.settings")
    background = tmp_path / "bg.ticks"
    runner = start_runner(env, "nightly", "sh", "-c", f"{sys.executable} {ticker} bg {background} 60 & sleep 0.5")
    assert runner.wait(timeout=STARTED) == 0
    assert not is_running(ticks(background)[0][0])
    assert get_client().get(NIGHTLY).is_released


def test_sigint_is_passed_on_to_the_command(dynalock, start_runner, tmp_path):
    env = manage_py_environment(dynalock, "testproject.settings")
    started = tmp_path / "started"
    script = f"import pathlib, time; pathlib.Path({str(started)!r}).touch(); time.sleep(60)"
    runner = start_runner(env, "nightly", sys.executable, "-c", script)
    wait_for(started.exists, STARTED)
    runner.send_signal(signal.SIGINT)
    # The command's KeyboardInterrupt ends it with SIGINT (130); the runner passes that on and releases.
    assert runner.wait(timeout=STARTED) == 128 + signal.SIGINT
    assert get_client().get(NIGHTLY).is_released
