"""``manage.py dynalock run`` as real processes: its command never runs without the lease.

Each command is a script that writes a line per tick (who, pid, fencing token, the monotonic
clock, which all processes of the machine share) to a file of its own: a command that runs on
after its runner died shows up as ticks after the next command's first.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dynalock_django.client import get_client
from dynalock_django.leader import EXIT_LEASE_LOST
from dynalock_django.locks import lock_key
from dynalock_django.supervised import FENCING_TOKEN_ENV

from ...dynamodb_support import PATIENCE
from ..processes import ROOT, is_running, manage_py_environment, wait_for

pytestmark = [pytest.mark.processes, pytest.mark.uses_dynalock]

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
STARTED = 12 * PATIENCE  # a minute: a CI run beside other work saw 20 s pass

# The runners' lease: each renewal has RUNNER_LEASE - RUNNER_HEARTBEAT to succeed while the runner starts
# its command (Python processes under coverage, on a loaded machine); the suite's 1 s lease left 0.75 s,
# and a runner that took over lost its lease while its command started.
RUNNER_LEASE = 3.0
RUNNER_HEARTBEAT = 0.5


def runner_environment(dynalock, **extra):
    """A runner's environment: the test project's settings, the runners' lease (``extra`` may change it)."""
    lease = {"DYNALOCK_LEASE_DURATION": str(RUNNER_LEASE), "DYNALOCK_HEARTBEAT_PERIOD": str(RUNNER_HEARTBEAT)}
    return manage_py_environment(dynalock, "testproject.settings", **{**lease, **extra})


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
    env = runner_environment(dynalock, **extra)
    first, second = tmp_path / "a.ticks", tmp_path / "b.ticks"
    runner_a = start_runner(env, "nightly", sys.executable, str(ticker), "a", str(first), "25")
    wait_for(lambda: ticks(first), STARTED)
    runner_b = start_runner(env, "nightly", sys.executable, str(ticker), "b", str(second), "0.5")
    time.sleep(2 * RUNNER_HEARTBEAT)  # b is waiting: a keeps renewing
    assert not ticks(second)

    runner_a.send_signal(signal.SIGKILL)
    runner_a.wait()
    assert runner_b.wait(timeout=10 * RUNNER_LEASE + STARTED) == 0

    a_ticks, b_ticks = ticks(first), ticks(second)
    assert b_ticks, "the next runner's command never ran"
    assert max(at for _, _, at in a_ticks) < min(at for _, _, at in b_ticks)  # never both at once
    assert not is_running(a_ticks[0][0])  # the orphan is gone, not just quiet
    assert b_ticks[0][1] > a_ticks[0][1]  # each command was told its own, increasing, token


def start_with_a_background_child(dynalock, start_runner, ticker, tmp_path):
    """A runner whose command (a shell) leaves one ticker in the background and becomes another; both ticking."""
    env = runner_environment(dynalock)
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
    gone = lambda: not is_running(ticks(background)[0][0]) and not is_running(ticks(foreground)[0][0])  # noqa: E731
    wait_for(gone, RUNNER_LEASE)
    assert max(at for _, _, at in ticks(background)) < killed + RUNNER_LEASE


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
    env = runner_environment(dynalock)
    background = tmp_path / "bg.ticks"
    # The command ends as soon as what it leaves behind has ticked once (a Python start under coverage on a
    # loaded machine can take longer than any fixed sleep).
    # (runner.wait's timeout bounds the loop; the runner fixture kills what is left.)
    python, script, ticks_file = (shlex.quote(str(part)) for part in (sys.executable, ticker, background))
    command = f"{python} {script} bg {ticks_file} 60 & until [ -s {ticks_file} ]; do sleep 0.05; done"
    runner = start_runner(env, "nightly", "sh", "-c", command)
    assert runner.wait(timeout=STARTED) == 0
    assert not is_running(ticks(background)[0][0])
    assert get_client().get(NIGHTLY).is_released


def test_sigint_is_passed_on_to_the_command(dynalock, start_runner, tmp_path):
    env = runner_environment(dynalock)
    started = tmp_path / "started"
    script = f"import pathlib, time; pathlib.Path({str(started)!r}).touch(); time.sleep(60)"
    runner = start_runner(env, "nightly", sys.executable, "-c", script)
    wait_for(started.exists, STARTED)
    runner.send_signal(signal.SIGINT)
    # The command's KeyboardInterrupt ends it with SIGINT (130); the runner passes that on and releases.
    assert runner.wait(timeout=STARTED) == 128 + signal.SIGINT
    assert get_client().get(NIGHTLY).is_released


def process_state(pid):
    """The state letter /proc shows for ``pid`` (T: stopped), or None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


def test_ctrl_z_stops_the_command_with_the_runner_and_fg_resumes_it_while_the_lease_holds(
    dynalock, start_runner, ticker, tmp_path
):
    env = runner_environment(dynalock, DYNALOCK_LEASE_DURATION="30", DYNALOCK_HEARTBEAT_PERIOD="2")
    path = tmp_path / "a.ticks"
    runner = start_runner(env, "nightly", sys.executable, str(ticker), "a", str(path), "60")
    wait_for(lambda: ticks(path), STARTED)
    command = ticks(path)[0][0]

    runner.send_signal(signal.SIGTSTP)  # Ctrl-Z

    wait_for(lambda: process_state(runner.pid) == "T" and process_state(command) == "T", STARTED)
    stopped = len(ticks(path))
    time.sleep(0.3)
    assert len(ticks(path)) == stopped  # the command stands still with its runner (and its heartbeat)

    runner.send_signal(signal.SIGCONT)  # fg, well inside the lease

    wait_for(lambda: len(ticks(path)) > stopped + 3, STARTED)
    assert process_state(runner.pid) != "T"
    assert get_client().get(NIGHTLY).owner_name is not None
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=STARTED) == 128 + signal.SIGTERM


def test_a_continue_after_the_lease_ran_out_ends_the_command_without_resuming_it(
    dynalock, start_runner, ticker, tmp_path
):
    env = runner_environment(dynalock)
    path = tmp_path / "a.ticks"
    runner = start_runner(env, "nightly", sys.executable, str(ticker), "a", str(path), "60")
    wait_for(lambda: ticks(path), STARTED)
    command = ticks(path)[0][0]
    runner.send_signal(signal.SIGTSTP)
    wait_for(lambda: process_state(runner.pid) == "T" and process_state(command) == "T", PATIENCE)
    time.sleep(RUNNER_LEASE + RUNNER_HEARTBEAT)  # past the lease: another runner may hold it by now

    continued = time.monotonic()
    runner.send_signal(signal.SIGCONT)

    assert runner.wait(timeout=STARTED) == EXIT_LEASE_LOST
    assert process_state(command) is None
    assert max(at for _, _, at in ticks(path)) < continued  # killed where it stood: not one tick more
    assert not Path(f"{path}.terminated").exists()  # not let run to handle a SIGTERM either


def test_a_command_run_from_a_terminal_reads_dev_null_and_is_told(dynalock, tmp_path):
    env = runner_environment(dynalock)
    read = tmp_path / "read"
    script = f"import pathlib, sys; pathlib.Path({str(read)!r}).write_text(repr(sys.stdin.read()))"
    controller, terminal = os.openpty()
    try:
        with subprocess.Popen(  # its end closes the pipe, whatever happened (a time-out left it to the GC)
            [sys.executable, "manage.py", "dynalock", "run", "nightly", "--", sys.executable, "-c", script],
            cwd=ROOT,
            env=env,
            stdin=terminal,
            stderr=subprocess.PIPE,
            text=True,
        ) as runner:
            try:
                _, errors = runner.communicate(timeout=STARTED)
            finally:
                runner.kill()
    finally:
        os.close(controller)
        os.close(terminal)
    assert runner.returncode == 0
    assert read.read_text() == "''"  # end of input at once, not a terminal that stops it for good
    assert "the command's input is /dev/null, not this terminal" in errors
