"""A command run under a lease (``manage.py dynalock run``) that must not run once the lease is gone.

The command runs in a process group of its own, so that stopping it stops
whatever it started too; the runner passes on the signals it gets, and on
SIGTERM stops the group before it releases the lease. On Linux the command
also gets the parent-death signal: if the runner dies without a word
(SIGKILL, the OOM killer), the kernel kills the command at once, long before
anyone else can take the lease; and a sentinel process in the command's group,
which gets a parent-death signal of its own, kills the rest of the group (what
the command started in the background). Its fencing token is in the
environment (:data:`FENCING_TOKEN_ENV`) so the command can fence its own writes.

Under a terminal: Ctrl-Z (SIGTSTP) stops the command's group with the
runner, and a continue (SIGCONT, ``fg``) resumes it only if the lease still
holds; otherwise the command is killed where it stands, never resumed
without the lease. A process group of its own cannot read the terminal (the
terminal would stop it for good with SIGTTIN while the runner renews on), so
a command run from a terminal gets /dev/null as its input (:func:`command_input`).

What no runner can do: stop a command that detached itself from its
process group (daemonized, ``setsid``), or, elsewhere than on Linux, a
command whose runner was killed with SIGKILL. Nor can it stop a command in
time if the runner itself was paused past its lease. The fence covers those:
docs/django/leader.md.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from types import FrameType

from .child_exit import wait_for_exit
from .dynamodb import printable
from .exceptions import ConfigurationError

# The environment variable that tells the command its lease's fencing token.
FENCING_TOKEN_ENV = "DYNALOCK_FENCING_TOKEN"  # noqa: S105 (a variable name, not a secret)

# Passed on to the command's process group as they are; SIGTERM stops it (SupervisedCommand.stop).
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

# The sentinel: a member of the command's group (so the group id stays its own while it lives) that
# kills the whole group once the runner is gone. Its parent-death signal is SIGURG, ignored by default,
# so a runner dying before the handler is set only leaves the check after it to notice; it ignores
# the signals the runner sends the group, and dies with the group's final SIGKILL.
_SENTINEL = f"""
import os, signal, sys
runner = int(sys.argv[1])
for signum in {tuple(int(s) for s in (signal.SIGTERM, *FORWARDED_SIGNALS))}:
    signal.signal(signum, signal.SIG_IGN)
def orphaned(*_):
    if os.getppid() != runner:
        os.killpg(0, signal.SIGKILL)
signal.signal(signal.SIGURG, orphaned)
orphaned()
while True:
    signal.pause()
"""


def fencing_token_from_environment() -> int:
    """In a command run by ``manage.py dynalock run``: its runner's fencing token, to fence writes with."""
    value = os.environ.get(FENCING_TOKEN_ENV)
    if value is None:
        raise ConfigurationError(
            f"{FENCING_TOKEN_ENV} is not set: run this command under `manage.py dynalock run NAME -- ...`."
        )
    try:
        return int(value)
    except ValueError:
        raise ConfigurationError(
            f"{FENCING_TOKEN_ENV} is '{printable(value[:40])}', not a fencing token: it is set by "
            "`manage.py dynalock run`, do not set it yourself."
        ) from None


class SupervisedCommand:
    """``command``, once :meth:`start` ed, in its own process group, dying with this thread on Linux.

    Start it inside :meth:`forwarding_signals`: a signal that arrives while it starts is then passed
    on once it runs, instead of interrupting the runner half-way (with the command already running).
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        fencing_token: int,
        grace_period: float,
        still_held: Callable[[], bool] = lambda: True,
    ) -> None:
        self._command = list(command)
        # Asked when the runner is continued after a stop: may the command run on?
        self._still_held = still_held
        self._fencing_token = fencing_token
        self._grace_period = grace_period
        self._stopping = threading.Lock()
        # Reentrant: a signal handler may run in the starting thread while it holds it.
        self._starting = threading.RLock()
        self._unsent: list[int] = []  # signals for the group that came before it existed
        self._kill_timer: threading.Timer | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._sentinel: subprocess.Popen[bytes] | None = None
        self.stopped = False
        # Killed at a continue because the lease ran out while runner and command were stopped.
        self.killed_stopped = False

    @property
    def process(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            raise RuntimeError("The command has not been started: call start() first.")
        return self._process

    def start(self) -> None:
        with self._starting:
            self._process = subprocess.Popen(  # noqa: S603 (the operator's own command line)
                self._command,
                env={**os.environ, FENCING_TOKEN_ENV: str(self._fencing_token)},
                stdin=command_input(),
                process_group=0,
                preexec_fn=_dies_with_this_thread(signal.SIGKILL),  # safe with threads: see there
            )
            self._sentinel = _start_sentinel(self._process.pid)
            unsent, self._unsent = self._unsent, []
        for signum in unsent:
            self.signal_group(signum)
        if self.stopped:  # stopped before it ran: its grace period starts now, with the SIGTERM it just got
            self._start_kill_timer()

    def signal_group(self, signum: int) -> None:
        with self._starting:
            if self._process is None:
                self._unsent.append(signum)
                return
        with contextlib.suppress(ProcessLookupError):  # the whole group is gone already
            os.killpg(self._process.pid, signum)

    def stop(self) -> None:
        """SIGTERM to the command's group, SIGKILL after the grace period. Once; from any thread."""
        if not self._stopping.acquire(blocking=False):
            return
        self.stopped = True
        with self._starting:
            self.signal_group(signal.SIGTERM)
            started = self._process is not None
        if started:
            self._start_kill_timer()
        # Else start() starts the timer: counted from here, a slow start (a loaded machine) would eat the
        # command's grace period, and its SIGKILL would come with its SIGTERM.

    def _start_kill_timer(self) -> None:
        """SIGKILL to the command's group after the grace period; once."""
        with self._starting:
            if self._kill_timer is not None:
                return
            self._kill_timer = threading.Timer(self._grace_period, self.signal_group, args=(signal.SIGKILL,))
            self._kill_timer.daemon = True
            self._kill_timer.start()

    def suspend(self) -> None:
        """The runner was told to stop (SIGTSTP: Ctrl-Z): stop the command's group, then the runner itself.

        SIGSTOP, which the command cannot ignore: a command running on while its runner (and so the
        heartbeat) stands still would outlive the lease, and another runner would start a second copy.
        """
        self.signal_group(signal.SIGSTOP)
        os.kill(os.getpid(), signal.SIGSTOP)

    def resume(self) -> None:
        """The runner was continued (SIGCONT): continue the command only if the lease still holds, else kill it.

        Killed, not asked to stop: a command let run to handle a SIGTERM would run without the lease.
        """
        if self._still_held():
            self.signal_group(signal.SIGCONT)
            return
        self.killed_stopped = self.stopped = True
        self.signal_group(signal.SIGKILL)

    def wait(self) -> int:
        """Wait for the command to exit, kill what it left in its group, and return its exit status.

        Killed by a signal: 128 + its number, as a shell reports it.
        """
        # Exited but not reaped: its pid, which is its group's id, cannot be reused meanwhile.
        process = self.process
        wait_for_exit(process.pid)  # signals keep their handlers meanwhile, whichever thread takes them
        self.signal_group(signal.SIGKILL)  # nothing it started may outlive it (and the lease); the sentinel too
        code = process.wait()
        if self._sentinel is not None:
            self._sentinel.wait()
        if self._kill_timer is not None:
            self._kill_timer.cancel()
        return 128 - code if code < 0 else code

    @contextlib.contextmanager
    def forwarding_signals(self) -> Iterator[None]:
        """While inside: SIGTERM stops the command, the other signals in FORWARDED_SIGNALS reach its group,
        SIGTSTP stops it with the runner and SIGCONT resumes it while the lease holds (:meth:`suspend`,
        :meth:`resume`).

        Signal handlers belong to the main thread: elsewhere this does nothing.
        """
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handle(signum: int, frame: FrameType | None) -> None:
            if signum == signal.SIGTERM:
                self.stop()
            elif signum == signal.SIGTSTP:
                self.suspend()
            elif signum == signal.SIGCONT:
                self.resume()
            else:
                self.signal_group(signum)

        handled = (signal.SIGTERM, signal.SIGTSTP, signal.SIGCONT, *FORWARDED_SIGNALS)
        previous = {signum: signal.signal(signum, handle) for signum in handled}
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


def command_input() -> int | None:
    """The command's standard input: the runner's, or /dev/null when that is a terminal.

    The command runs in a process group of its own, which is not the terminal's foreground group:
    reading the terminal would stop it (SIGTTIN) for good while the runner renewed its lease on.
    """
    try:
        return subprocess.DEVNULL if os.isatty(0) else None
    except OSError:
        return None


def _start_sentinel(group: int) -> subprocess.Popen[bytes] | None:
    """The sentinel of the command's process group ``group`` (Linux only, like the parent-death signal)."""
    dies_with_this_thread = _dies_with_this_thread(signal.SIGURG)
    if dies_with_this_thread is None:
        return None
    # The group exists until the command is reaped, which only its wait() does: it cannot have gone.
    return subprocess.Popen(  # noqa: S603 (this interpreter, our own code)
        [sys.executable, "-c", _SENTINEL, str(os.getpid())],
        stdin=subprocess.DEVNULL,
        process_group=group,
        preexec_fn=dies_with_this_thread,
    )


def _dies_with_this_thread(death_signal: int) -> Callable[[], None] | None:
    """What a child runs before exec: ask the kernel for ``death_signal`` when the thread that started it ends.

    Linux only (prctl PR_SET_PDEATHSIG); None elsewhere. The function is looked up here, before the
    fork, so that the child only makes one C call: subprocess warns that a preexec_fn may deadlock
    in a process with threads (ours has the heartbeat's) when it takes a lock another thread held
    at the fork, and a bare foreign call takes none. The signal follows the *thread* that forked,
    which is the one that waits for the command.
    """
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    runner = os.getpid()

    def die_with_the_runner() -> None:
        prctl(_PR_SET_PDEATHSIG, death_signal, 0, 0, 0)
        if os.getppid() != runner:  # the runner died before the call above: the signal will not come
            os.kill(os.getpid(), death_signal)

    return die_with_the_runner
