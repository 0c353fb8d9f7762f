"""How long a lock takes to come back, for every way its holder can end.

    python -m tests.benchmarks.recovery [--rounds 3] [--lease 2] [--skew 0.5]

Each row ends a holder one way and times, on the machine's monotonic clock (shared by all its
processes), how long until the next holder's grant: from the holder's end (the release call, the
signal, the kill) or, for a waiter arriving late, from its arrival. Each is run with the waiter on
the clock-free rule and with ``max_clock_skew``; holders always stamp their writes. Short leases
keep it to a few minutes; the times scale with the lease.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dynalock_django.dynamodb import LockClient

from ..django.processes import ROOT, manage_py_environment
from ..dynamodb_support import REGION, make_dynamodb, unique
from . import recovery_processes
from .protocol import endpoint, print_table

spawn = multiprocessing.get_context("spawn")


@dataclass(frozen=True)
class Setup:
    endpoint_url: str
    table_name: str
    lease: float
    logs: Path

    def environment(self, settings_module: str, **extra: str) -> dict[str, str]:
        dynalock = {
            "TABLE_NAME": self.table_name,
            "ENDPOINT_URL": self.endpoint_url,
            "REGION_NAME": REGION,
            "LEASE_DURATION": self.lease,
            "HEARTBEAT_PERIOD": self.lease / 4,
        }
        return manage_py_environment(dynalock, settings_module, **extra)

    def start(self, command: list[str], ready: Path, settings_module: str, **extra: str) -> subprocess.Popen[bytes]:
        """Start ``command``, its output logged beside ``ready``, and wait until it writes ``ready``."""
        log = ready.with_suffix(".log")
        with log.open("wb") as output:
            process = subprocess.Popen(
                command, cwd=ROOT, env=self.environment(settings_module, **extra), stdout=output, stderr=output
            )
        deadline = time.monotonic() + 60
        while not (ready.exists() and ready.read_text()):
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError(f"{' '.join(command)} never got the lock:\n{log.read_text()[-3000:]}")
            time.sleep(0.02)
        return process


class Waiter:
    """Another process waiting for the lock, with or without the clock bound.

    By default a protocol client's ``acquire``; ``recovery_processes.standby_and_report`` is a standby
    ``dynalock run`` instead, whose grant is its command's start.
    """

    def __init__(
        self, setup: Setup, key: str, max_clock_skew: float | None, target: Callable[..., None] | None = None
    ) -> None:
        self.times = spawn.Array("d", 2)
        waiting = spawn.Event()
        args = (setup.endpoint_url, setup.table_name, key, setup.lease, max_clock_skew, self.times, waiting)
        self.process = spawn.Process(target=target or recovery_processes.wait_and_report, args=args)
        self.process.start()
        if not waiting.wait(60):
            raise RuntimeError("the waiter did not start")
        time.sleep(0.1)  # its first attempt is refused: it is waiting

    def granted(self, lease: float) -> tuple[float, float]:
        """(arrived, granted) on the monotonic clock."""
        self.process.join(30 * lease)
        if self.process.exitcode != 0:
            raise RuntimeError(f"the waiter failed (exit code {self.process.exitcode})")
        return self.times[0], self.times[1]


# A way to end a holder: it starts the holder, waits until it holds ``key``, then returns the function
# that ends it, which returns when it did and anything to clean up afterwards.
Ending = Callable[[Setup, str], Callable[[], tuple[float, Callable[[], None]]]]


def protocol_holder(target: Callable[..., None], stop: Callable[[Any, Any], None]) -> Ending:
    def start(setup: Setup, key: str) -> Callable[[], tuple[float, Callable[[], None]]]:
        held, end = spawn.Event(), spawn.Event()
        process = spawn.Process(target=target, args=(setup.endpoint_url, setup.table_name, key, setup.lease, held, end))
        process.start()
        if not held.wait(60):
            raise RuntimeError("the holder did not get the lock")

        def finish() -> tuple[float, Callable[[], None]]:
            ended = time.monotonic()
            stop(process, end)
            return ended, lambda: process.join(60)

        return finish

    return start


def manage_py_holder(arguments: list[str], settings_module: str, signum: int) -> Ending:
    """``manage.py`` holding the lock named ``key``, told to stop with ``signum``."""

    def start(setup: Setup, key: str) -> Callable[[], tuple[float, Callable[[], None]]]:
        ready = setup.logs / unique("ready")
        command = [sys.executable, "manage.py", *(a.format(key=key, ready=ready) for a in arguments)]
        process = setup.start(command, ready, settings_module)

        def finish() -> tuple[float, Callable[[], None]]:
            ended = time.monotonic()
            process.send_signal(signum)
            return ended, lambda: process.wait(60)

        return finish

    return start


def gunicorn_worker(setup: Setup, key: str) -> Callable[[], tuple[float, Callable[[], None]]]:
    ready = setup.logs / unique("ready")
    command = [sys.executable, "-m", "gunicorn", "-c", f"python:{recovery_processes.__name__}", "-b", "127.0.0.1:0"]
    extra = {"RECOVERY_READY_FILE": str(ready), "RECOVERY_LOCK_NAME": key}
    arbiter = setup.start([*command, f"{recovery_processes.__name__}:app"], ready, "testproject.settings", **extra)
    worker = int(ready.read_text())

    def finish() -> tuple[float, Callable[[], None]]:
        ended = time.monotonic()
        os.kill(worker, signal.SIGTERM)

        def stop_gunicorn() -> None:
            arbiter.send_signal(signal.SIGTERM)
            arbiter.wait(60)

        return ended, stop_gunicorn

    return finish


def _kill(process: Any, end: Any) -> None:
    process.kill()


def _set(process: Any, end: Any) -> None:
    end.set()


KILLED_HOLDER = protocol_holder(recovery_processes.hold, _kill)
HOLD = ["hold_lock", "{key}", "--ready-file", "{ready}"]
RUN = ["dynalock", "run", "{key}", "--", "sh", "-c", "echo $$ > {ready}; exec sleep 600"]
ENDINGS: list[tuple[str, str, Ending]] = [
    ("normal release", "its release", protocol_holder(recovery_processes.hold_and_release, _set)),
    ("process exit", "close() releases", protocol_holder(recovery_processes.hold, _set)),
    (
        "SIGTERM, plain manage.py command",
        "nothing (it dies): a takeover",
        manage_py_holder(HOLD, "tests.settings", signal.SIGTERM),
    ),
    (
        "SIGTERM, manage.py command + SystemExit line",
        "with-blocks release",
        manage_py_holder([*HOLD, "--release-on-sigterm"], "tests.settings", signal.SIGTERM),
    ),
    (
        "SIGTERM, manage.py dynalock run",
        "stops the command, releases",
        manage_py_holder(RUN, "testproject.settings", signal.SIGTERM),
    ),
    ("SIGTERM, gunicorn worker", "exit: atexit close() releases", gunicorn_worker),
    ("SIGKILL, waiter already waiting", "nothing: a takeover", KILLED_HOLDER),
]
# Leader election: a runner (`manage.py dynalock run`, a Leadership) killed with SIGKILL, and a standby
# runner, whose failover is complete when its command starts.
KILLED_LEADER = manage_py_holder(RUN, "testproject.settings", signal.SIGKILL)


def time_ending(
    setup: Setup, ending: Ending, max_clock_skew: float | None, waiter_target: Callable[..., None] | None = None
) -> float:
    key = unique("recovery")
    finish = ending(setup, key)
    waiter = Waiter(setup, key, max_clock_skew, waiter_target)
    ended, clean_up = finish()
    _, granted = waiter.granted(setup.lease)
    clean_up()
    return granted - ended


def time_late_arrival(
    setup: Setup,
    max_clock_skew: float | None,
    ending: Ending = KILLED_HOLDER,
    waiter_target: Callable[..., None] | None = None,
) -> tuple[float, float]:
    """SIGKILL, then a waiter arrives two leases later: (kill -> grant, arrival -> grant)."""
    key = unique("recovery")
    ended, clean_up = ending(setup, key)()
    clean_up()
    time.sleep(max(0.0, 2 * setup.lease - (time.monotonic() - ended)))
    waiter = Waiter(setup, key, max_clock_skew, waiter_target)
    arrived, granted = waiter.granted(setup.lease)
    return granted - ended, granted - arrived


def late_rows(name: str, late: list[list[tuple[float, float]]]) -> list[tuple[str, ...]]:
    """A late waiter's two rows: from the kill and from its arrival; one list of rounds per rule."""
    return [
        (
            f"{name} ({label} -> grant)",
            "nothing: a takeover",
            *(summary([1000 * t[index] for t in rounds]) for rounds in late),
        )
        for label, index in (("kill", 0), ("arrival", 1))
    ]


def summary(milliseconds: list[float]) -> str:
    return f"{statistics.median(milliseconds):.0f} / {max(milliseconds):.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lease", type=float, default=2.0)
    parser.add_argument("--skew", type=float, default=0.5)
    args = parser.parse_args()
    rules: list[float | None] = [None, args.skew]
    rows = []
    with endpoint() as endpoint_url, tempfile.TemporaryDirectory() as logs:
        table_name = unique("bench")
        # A generous read timeout: the endpoint's first request may be slow.
        LockClient(make_dynamodb(endpoint_url, read_timeout=5), table_name).create_table()
        setup = Setup(endpoint_url, table_name, args.lease, Path(logs))
        for name, frees, ending in ENDINGS:
            cells = [summary([1000 * time_ending(setup, ending, rule) for _ in range(args.rounds)]) for rule in rules]
            rows.append((name, frees, *cells))
            print(f"  {name}: {' | '.join(cells)}", file=sys.stderr, flush=True)
        rows += late_rows(
            "SIGKILL, waiter arrives 2 leases later",
            [[time_late_arrival(setup, rule) for _ in range(args.rounds)] for rule in rules],
        )
        standby = recovery_processes.standby_and_report
        cells = [
            summary([1000 * time_ending(setup, KILLED_LEADER, rule, standby) for _ in range(args.rounds)])
            for rule in rules
        ]
        rows.append(("Leadership failover: runner SIGKILLed, standby waiting", "nothing: a takeover", *cells))
        late = [[time_late_arrival(setup, rule, KILLED_LEADER, standby) for _ in range(args.rounds)] for rule in rules]
        rows += late_rows("Leadership failover: runner SIGKILLed, standby starts 2 leases later", late)
    header = ("holder ends by", "what frees the lock", "clock-free ms median / max", f"max_clock_skew={args.skew:g} s")
    print(f"lease {args.lease:g} s, heartbeat {args.lease / 4:g} s, {args.rounds} rounds each")
    print_table(header, rows)


if __name__ == "__main__":
    main()
