"""SupervisedCommand in this process: signals that come while the command starts are not lost."""

from __future__ import annotations

import os
import signal

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
