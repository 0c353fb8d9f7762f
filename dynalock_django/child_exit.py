"""Waiting for a child process to exit while this process's signal handlers still run on time.

Python runs a signal's handler in the main thread, but the kernel may give the signal to any
thread that lets it through. Taken by another thread (the heartbeat's) while the main thread
sits in a blocking wait, a signal only marks its handler pending, and the handler runs when the
wait returns: for a runner waiting on its command, when the command ends. A continue after
Ctrl-Z taken so left the command stopped for good while the runner renewed its lease on. So the
main thread waits on the child and on the signal wakeup fd together: a signal, whichever thread
takes it, ends the wait's round, and its handler runs before the next.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import threading
from collections.abc import Iterator

# Where a child cannot be waited on through a file descriptor (no pidfd_open): how often to look.
POLL_SECONDS = 0.1


def wait_for_exit(pid: int) -> None:
    """Return once child ``pid`` has exited, without reaping it (its pid stays its own until then)."""
    if threading.current_thread() is not threading.main_thread():
        # Signal handlers run in the main thread only: nothing to let run here.
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        return
    with _signal_wakeups() as wakeup, _exit_descriptor(pid) as exited:
        watched: list[int] = [wakeup.fileno()] if exited is None else [wakeup.fileno(), exited]
        while not _has_exited(pid):
            select.select(watched, [], [], POLL_SECONDS if exited is None else None)
            _drain(wakeup)  # back in Python: the eval loop runs the pending handlers here


def _has_exited(pid: int) -> bool:
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None


@contextlib.contextmanager
def _signal_wakeups() -> Iterator[socket.socket]:
    """A socket the C-level handler of every Python-handled signal writes to; the previous one restored after."""
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    try:
        yield reader
    finally:
        signal.set_wakeup_fd(previous)
        reader.close()
        writer.close()


@contextlib.contextmanager
def _exit_descriptor(pid: int) -> Iterator[int | None]:
    """A file descriptor readable once ``pid`` exits (Linux's pidfd), or None where there is none."""
    try:
        descriptor = os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux, a kernel before 5.3, or a sandbox that refuses it
        yield None
        return
    try:
        yield descriptor
    finally:
        os.close(descriptor)


def _drain(wakeup: socket.socket) -> None:
    with contextlib.suppress(BlockingIOError):
        while wakeup.recv(512):
            pass
