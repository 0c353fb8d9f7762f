"""SupervisedCommand in this process: signals that come while the command starts are not lost."""

from __future__ import annotations

import os
import signal
import time

from dynalock_django.supervised import SupervisedCommand

# Not Python: an interpreter that gets SIGINT while it starts exits 1 ("Failed to import the site
# module"), not by the signal. Ten seconds is its natural end, if the signal never reaches it.
COMMAND = ["sleep", "10"]


def test_a_signal_that_comes_before_the_command_runs_reaches_it_once_it_does():
    command = SupervisedCommand(COMMAND, fencing_token=1, grace_period=1)
    with command.forwarding_signals():
        os.kill(os.getpid(), signal.SIGINT)  # handled at once, in this thread, before the command exists
        command.start()
        code = command.wait()
    assert code == 128 + signal.SIGINT


def test_stopping_before_the_start_stops_the_command_as_soon_as_it_runs():
    command = SupervisedCommand(COMMAND, fencing_token=1, grace_period=1)
    command.stop()  # a lease lost (the heartbeat's thread) between its grant and the start
    command.start()
    assert command.wait() == 128 + signal.SIGTERM
    assert command.stopped


def test_a_start_slower_than_the_grace_period_still_gives_the_command_its_grace_period():
    """The grace period counts from the SIGTERM the command gets, not from the stop (a loaded machine's slow start)."""
    command = SupervisedCommand(COMMAND, fencing_token=1, grace_period=0.5)
    command.stop()
    time.sleep(0.7)  # the start comes after the grace period: before, its SIGKILL came with its SIGTERM
    # A command that ignores SIGTERM (inherited across exec) ends only by the SIGKILL: when it comes is measured.
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        started = time.monotonic()
        command.start()
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert command.wait() == 128 + signal.SIGKILL
    assert time.monotonic() - started >= 0.5
