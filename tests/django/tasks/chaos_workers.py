"""The task chaos run's workers (chaos.py): how one starts, is killed, and is replaced without waiting.

Each worker is the queue's own worker process in a session of its own, so that a SIGKILL of the session
is the whole worker's (a prefork pool's children too). The workers of a run are forked by its
:class:`Starter` (warm_start.py), which imported Python, Django and the queue's modules once: a
kill's replacement takes copies at once. Started each by a new interpreter, a worker took 1.5 s of
CPU (4 s on the shared 2-core machine) to begin, while the run's other workers carried its share,
and the replacements' imports were most of a run's CPU.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ...dynamodb_support import PATIENCE
from ..processes import ROOT

PYTHON = sys.executable
STARTER_PATIENCE = 60.0  # seconds for the starter's imports, and then for each fork's pid, on a loaded machine


@dataclass
class Worker:
    """A worker process: the leader of a session (its pool's processes in it too)."""

    ident: str
    pid: int
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)  # when this process started it
    dead: bool = False

    def pids(self) -> list[int]:
        """The worker and every process of its session (a prefork pool's children)."""
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = stat.read_text().rsplit(")", 1)[1].split()
                if int(fields[3]) == self.pid:  # its session: the pool's children too
                    found.append(int(stat.parent.name))
        return found

    def kill(self, announce: Callable[[list[int]], object] = lambda pids: None) -> list[int]:
        """SIGKILL its whole session; once its processes are gone, ``announce(pids)`` records the kill."""
        pids = self.pids()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)
        if self.process is not None:
            self.process.wait(timeout=PATIENCE)
        wait_until_gone(pids)
        announce(pids)
        self.dead = True
        return pids


def kill(pid: int, announce: Callable[[list[int]], object]) -> None:
    """SIGKILL one process (a pool's); once it is gone, ``announce([pid])`` records the kill."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    wait_until_gone([pid])
    announce([pid])


def wait_until_gone(pids: list[int]) -> None:
    """Until none of ``pids`` runs (reaped or a zombie: their parent, the starter or the worker, reaps them).

    A kill is recorded only then: recorded before the signal, a process could write its run's ``start``
    after the kill's record and before the signal landed, and that run would never end in the records (it
    did, under load, once in four runs of a cluster of nine processes). A kill's record comes a few
    milliseconds after the processes died: a run's end is read a little late, never early (an overlap
    is found, never hidden), and a key's takeover, seconds later, a little early.
    """
    deadline = time.monotonic() + PATIENCE
    while any(_running(pid) for pid in pids):
        assert time.monotonic() < deadline, f"{pids} still running {PATIENCE:g} s after SIGKILL"
        time.sleep(0.005)


def _running(pid: int) -> bool:
    """The process exists and is no zombie (a zombie's parent has not reaped it yet: it runs nothing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def popen(command: list[str], env: dict[str, str], log: Path, *, piped: bool = False) -> subprocess.Popen[bytes]:
    """``python`` with ``command`` in a session of its own, from the repository's root, its output to ``log``
    (``piped``: its stdin and stdout are pipes of ours, its stderr the log)."""
    pipe = subprocess.PIPE if piped else None
    with log.open("ab") as output:  # the child keeps its own descriptor
        return subprocess.Popen(
            [PYTHON, *command],
            cwd=ROOT,
            env=env,
            stdin=pipe,
            stdout=pipe if piped else output,
            stderr=output,
            start_new_session=True,
        )


class Starter:
    """warm_start.py, running: ``start(ident, command, log)`` forks worker ``ident`` from it."""

    def __init__(self, imports: tuple[str, ...], env: dict[str, str], log: Path) -> None:
        self.process = popen(["-m", "tests.django.tasks.warm_start", *imports], env, log, piped=True)
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.stdin, self.stdout = self.process.stdin, self.process.stdout
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.stdout, selectors.EVENT_READ)

    def start(self, ident: str, command: list[str], log: Path) -> Worker:
        self.stdin.write(json.dumps({"command": command, "log": str(log)}).encode() + b"\n")
        self.stdin.flush()
        # Its first answer waits for its imports; each later one, for a fork.
        if not self.selector.select(timeout=STARTER_PATIENCE):
            raise AssertionError(f"the worker starter forked no {ident} within {STARTER_PATIENCE:g} s")
        answer = self.stdout.readline()
        assert answer, f"the worker starter ended (exit {self.process.poll()}): see its log"
        return Worker(ident, int(answer))

    def close(self) -> None:
        """The starter ends (end of its input); the workers it started are the run's to kill."""
        self.selector.close()
        self.stdin.close()
        try:
            self.process.wait(timeout=PATIENCE)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.stdout.close()


class Framework:
    """How one framework's workers start and its copies are enqueued."""

    name: str
    env: dict[str, str]  # the workers' environment
    workdir: Path  # where their logs go
    retries = False  # the queue retries a failed copy itself: some copies' first attempts fail
    whole_workers = False  # a kill is always of a whole worker (its supervisor would react to a lost child)
    # What the worker starter imports (warm_start.py): the queue's modules and what its tasks need, not what
    # a worker's own main makes (dramatiq's broker is made in the worker's forked child).
    warm_imports: tuple[str, ...] = ()

    def worker_command(self, ident: str) -> list[str]:
        """``python``'s arguments that start worker ``ident``."""
        raise NotImplementedError

    def starter(self) -> Starter:
        """A worker starter with this framework's imports done (its log: ``starter.log``)."""
        return Starter(self.warm_imports, self.env, self.workdir / "starter.log")

    def start_worker(self, ident: str, starter: Starter | None = None) -> Worker:
        """Worker ``ident``, forked by ``starter``; without one, a new interpreter (slow to begin)."""
        log = self.workdir / f"{ident}.log"
        if starter is not None:
            return starter.start(ident, self.worker_command(ident), log)
        process = popen(self.worker_command(ident), self.env, log)
        return Worker(ident, process.pid, process)

    def enqueue(self, name: str, seconds: float, flaky: bool, probe: bool) -> None:
        raise NotImplementedError

    def after_worker_killed(self, worker: Worker) -> None:
        """What the framework's operator does about a dead worker's task (nothing, when its queue does it)."""

    def queue_state(self) -> str:
        """What the queue holds, for a run that did not settle."""
        return ""

    def close(self) -> None:
        """Stop what the framework started besides its workers."""
