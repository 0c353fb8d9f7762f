"""SupervisedCommand in this process: signals that come while the command starts are not lost."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
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


def test_a_signal_another_thread_takes_while_the_runner_waits_is_still_passed_on_at_once():
    # The kernel gives a process's signal to any thread that lets it through; Python runs the handler in the
    # main thread only. Here the main thread blocks SIGINT, so only the thread below can take it: a wait that
    # does not wake for it lets the command run to its natural end with the signal never passed on.
    command = SupervisedCommand(COMMAND, fencing_token=1, grace_period=1)
    started = threading.Event()

    def interrupt_once_waiting() -> None:
        started.wait()
        time.sleep(0.2)  # inside the wait (waiting longer only tests less, never fails)
        os.kill(os.getpid(), signal.SIGINT)

    taker = threading.Thread(target=interrupt_once_waiting)  # made before the mask: it lets SIGINT through
    taker.start()
    with command.forwarding_signals():
        command.start()
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            started.set()
            code = command.wait()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    taker.join()
    assert code == 128 + signal.SIGINT


def test_the_command_and_its_sentinel_start_without_python_between_fork_and_exec(monkeypatch):
    """No ``preexec_fn``: in a process with threads (the runner's heartbeat), Python code run between fork and
    exec may block for good on a lock another thread held at the fork. A CI run caught a command's child so,
    never exec'd, and its runner waiting for it with the lease held. The children ask for their death signal
    themselves, after their exec."""
    started: list[dict[str, object]] = []
    popen = subprocess.Popen

    def recording(*args: object, **kwargs: object) -> subprocess.Popen[bytes]:
        started.append(kwargs)
        return popen(*args, **kwargs)  # type: ignore[call-overload, no-any-return]

    monkeypatch.setattr(subprocess, "Popen", recording)
    command = SupervisedCommand(["true"], fencing_token=1, grace_period=1)
    command.start()
    assert command.wait() == 0
    assert len(started) == 2  # the command and its group's sentinel (Linux)
    assert all(kwargs.get("preexec_fn") is None for kwargs in started)


def test_the_command_gets_the_signal_dispositions_a_plain_subprocess_gets(tmp_path):
    """Python ignores SIGPIPE and SIGXFSZ, and an exec keeps what is ignored: the command must not inherit that
    from what starts it (a pipeline in it would not end when its reader does)."""
    status = tmp_path / "status"
    command = SupervisedCommand(
        ["sh", "-c", f"grep SigIgn /proc/self/status > {status}"], fencing_token=1, grace_period=1
    )
    command.start()
    assert command.wait() == 0
    ignored = int(status.read_text().split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1))
    assert not ignored & (1 << (signal.SIGXFSZ - 1))
