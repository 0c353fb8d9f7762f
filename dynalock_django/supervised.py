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

# What a child of the runner runs first, on Linux, as its own fresh process: ask the kernel for a signal
# when the runner's thread that started it ends (prctl PR_SET_PDEATHSIG), then check the runner did not die
# before that call (the signal would never come). In the child, not in a preexec_fn: between fork and exec
# a process with threads (the runner's heartbeat) may find a lock held for good by a thread the fork left
# behind: a CI run caught a command's child blocked so before its exec, and its runner with it.
_DEATH_SIGNAL = f"""
import ctypes, os, signal, sys
def dies_with_the_runner(runner, death_signal):
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl({_PR_SET_PDEATHSIG}, death_signal, 0, 0, 0)
    if os.getppid() != runner:
        os.kill(os.getpid(), death_signal)
"""

# The command's first program (Linux): its death signal (SIGKILL), the signals Python changed at its start
# given back their defaults as subprocess gives them (SIGINT; SIGPIPE and SIGXFSZ, which it ignores and
# exec would keep ignored), then the command itself, in the same process.
_COMMAND = (
    _DEATH_SIGNAL
    + """
signal.signal(signal.SIGINT, signal.SIG_DFL)
runner, command = int(sys.argv[1]), sys.argv[2:]
dies_with_the_runner(runner, signal.SIGKILL)
for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ"):
    if hasattr(signal, name):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
try:
    os.execvp(command[0], command)
except OSError as error:
    sys.stderr.write("dynalock run: cannot run %r: %s\\n" % (command[0], error.strerror))
    os._exit(127)
"""
)

# The sentinel: a member of the command's group (so the group id stays its own while it lives) that
# kills the whole group once the runner is gone. Its parent-death signal is SIGURG, ignored by default,
# so a runner dying before the handler is set only leaves the check after it to notice; it ignores
# the signals the runner sends the group, and dies with the group's final SIGKILL.
_SENTINEL = (
    _DEATH_SIGNAL
    + f"""
runner = int(sys.argv[1])
for signum in {tuple(int(s) for s in (signal.SIGTERM, *FORWARDED_SIGNALS))}:
    signal.signal(signum, signal.SIG_IGN)
def orphaned(*_):
    if os.getppid() != runner:
        os.killpg(0, signal.SIGKILL)
signal.signal(signal.SIGURG, orphaned)
dies_with_the_runner(runner, signal.SIGURG)
orphaned()
while True:
    signal.pause()
"""
)


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
                _dying_with_this_thread(self._command),
                env={**os.environ, FENCING_TOKEN_ENV: str(self._fencing_token)},
                stdin=command_input(),
                process_group=0,
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
    if not _HAS_DEATH_SIGNAL:
        return None
    # The group exists until the command is reaped, which only its wait() does: it cannot have gone.
    return subprocess.Popen(  # noqa: S603 (this interpreter, our own code)
        [sys.executable, "-I", "-S", "-c", _SENTINEL, str(os.getpid())],
        stdin=subprocess.DEVNULL,
        process_group=group,
    )


def _dying_with_this_thread(command: list[str]) -> list[str]:
    """``command``, run (on Linux) through :data:`_COMMAND`: killed by the kernel when the thread that starts
    it (the one that waits for it) ends, though the runner be SIGKILLed."""
    if not _HAS_DEATH_SIGNAL:
        return command
    return [sys.executable, "-I", "-S", "-c", _COMMAND, str(os.getpid()), *command]


_HAS_DEATH_SIGNAL = sys.platform.startswith("linux")
