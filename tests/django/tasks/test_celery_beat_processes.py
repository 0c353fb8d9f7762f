"""Three ``celery beat`` processes with LeaderScheduler on a real Redis, the leader SIGKILLed and SIGSTOPped in turn.

A worker records each run of a task due every second with the due time its message carries. Over the
run every due time is sent once (no duplicate), even by a leader stopped past its lease and then
continued (it wakes stale: its lease ran out, a successor's token is in the beat's row), and no run is
later than about one lease. docs/django/celery-beat.md shows this run's figures.
"""

from __future__ import annotations

import contextlib
import datetime
import itertools
import os
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ...dynamodb_support import PATIENCE, make_dynamodb, short_lease_client
from ..processes import ROOT, manage_py_environment
from .environment import BROKER, RUNS
from .test_task_chaos import with_share_of
from .workers import redis_server

pytestmark = [
    pytest.mark.chaos,
    pytest.mark.uses_dynalock,
    pytest.mark.slow,
    with_share_of("celery"),  # CI's legs share the chaos tier: this run goes with Celery's task chaos
]

LEASE, HEARTBEAT, REFRESH = 2.0, 0.5, 0.25
# A loaded machine must not lose a leader's lease by itself: a beat process asks a local store one request at a time.
BOTO_CONFIG = {"connect_timeout": 0.25, "read_timeout": 1.0, "retries": {"total_max_attempts": 1}}
EVERY = 4.0  # seconds between two faults
STOPPED = 2 * LEASE + 1.0  # how long a stopped leader stays stopped: its successor takes over and sends meanwhile
FAULTS = ("kill", "stop", "kill", "stop")
PYTHON = sys.executable
APP = "tests.django.tasks.beat_app"


@dataclass(frozen=True)
class Run:
    due: float  # the due time its message carried (epoch seconds)
    ran: float


def read_runs(path: Path) -> list[Run]:
    lines = path.read_text().splitlines() if path.exists() else []
    return [Run(datetime.datetime.fromisoformat(due).timestamp(), float(ran)) for due, ran in map(str.split, lines)]


def popen(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as output:
        return subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )


def stop(process: subprocess.Popen[bytes], how: int = signal.SIGTERM) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGCONT)
        os.killpg(process.pid, how)
    try:
        process.wait(timeout=PATIENCE)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def test_three_beats_send_every_due_time_once_through_kills_and_stops_of_the_leader(dynalock, tmp_path):
    settings: dict[str, Any] = {
        **dynalock,
        "LEASE_DURATION": LEASE,
        "HEARTBEAT_PERIOD": HEARTBEAT,
        "REFRESH_PERIOD": REFRESH,
        "BOTO_CONFIG": BOTO_CONFIG,
    }
    runs = tmp_path / "runs"
    database = tmp_path / "beat.sqlite3"
    env = manage_py_environment(
        settings,
        "tests.settings",
        DYNALOCK_TEST_DATABASE=str(database),
        DYNALOCK_TEST_SQLITE_SHARED="1",
        **{RUNS: str(runs)},
    )
    subprocess.run([PYTHON, "manage.py", "migrate", "-v0", "--skip-checks"], cwd=ROOT, env=env, check=True, timeout=120)
    with contextlib.closing(sqlite3.connect(database)) as connection:  # kept by the file: readers never wait on writers
        assert connection.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
    observer = short_lease_client(make_dynamodb(settings["ENDPOINT_URL"]), settings["TABLE_NAME"])
    key = settings.get("KEY_PREFIX", "") + "celery beat beat-proof"
    started = 0
    beats: list[subprocess.Popen[bytes]] = []
    faults: list[tuple[str, float]] = []

    def start_beat() -> None:
        nonlocal started
        command = [PYTHON, "-m", "celery", "-A", APP, "beat", "-S", "dynalock_django.celery.LeaderScheduler"]
        command += ["-s", str(tmp_path / f"schedule-{started}"), "--max-interval", "1", "-l", "info"]
        beats.append(popen(command, env, tmp_path / f"beat-{started}.log"))
        started += 1

    def leader() -> subprocess.Popen[bytes] | None:
        lock = observer.get(key)
        if lock is None or lock.is_released:
            return None
        pid = int(lock.owner_name.split(":")[1])  # host:pid:random, the default owner name
        return next((beat for beat in beats if beat.pid == pid), None)

    with redis_server() as broker:
        env[BROKER] = broker
        worker = popen(
            [PYTHON, "-m", "celery", "-A", APP, "worker", "--pool=solo", "-l", "warning"], env, tmp_path / "w.log"
        )
        try:
            for _ in range(3):
                start_beat()
            deadline = time.monotonic() + 60
            while not read_runs(runs):
                assert time.monotonic() < deadline, "no run within a minute: " + (tmp_path / "beat-0.log").read_text()
                time.sleep(0.2)
            began = time.monotonic()
            for fault in FAULTS:
                time.sleep(EVERY)
                target = leader()
                if target is None:
                    continue
                faults.append((fault, time.time()))
                if fault == "kill":
                    os.killpg(target.pid, signal.SIGKILL)
                    target.wait(timeout=PATIENCE)
                    beats.remove(target)
                    start_beat()
                else:
                    os.killpg(target.pid, signal.SIGSTOP)
                    time.sleep(STOPPED)
                    os.killpg(target.pid, signal.SIGCONT)  # it wakes a stale leader
            time.sleep(EVERY)
            seconds = time.monotonic() - began
        finally:
            for beat in beats:
                stop(beat)
            time.sleep(1.0)  # the last sends reach the worker
            stop(worker)
            observer.close(release=False)

    found = read_runs(runs)
    dues = sorted(run.due for run in found)
    duplicates = len(dues) - len(set(dues))
    late = max(run.ran - run.due for run in found)
    gap = max((b - a for a, b in itertools.pairwise(dues)), default=0.0)
    # A due time is the entry's last run plus the period, the last run being the send before it: due times sent once
    # each are a period apart at least. Two beats sending (each from its own last run) would come closer.
    closest = min((b - a for a, b in itertools.pairwise(dues)), default=1.0)
    print(
        f"\n| beats | run (s) | faults (SIGKILL / SIGSTOP) | runs | duplicates | closest due times (s) "
        f"| latest run after its due time (s) "
        f"| longest gap between due times (s) | lease (s) |\n"
        f"| 3 | {seconds:.0f} | {sum(f == 'kill' for f, _ in faults)} / {sum(f == 'stop' for f, _ in faults)} "
        f"| {len(found)} | {duplicates} | {closest:.2f} | {late:.2f} | {gap:.2f} | {LEASE:g} |"
    )
    # Safety, strict whatever the machine's load: no due time twice, none by two beats.
    assert duplicates == 0
    assert closest >= 1.0 - 1e-3
    assert {fault for fault, _ in faults} == {"kill", "stop"}, faults  # the faults happened, or this proves nothing
    # Liveness, loose (a 2-core CI machine running other tests can starve a beat for seconds): a leader's death
    # costs about a lease (a waiter's poll, a heartbeat, a request's time-out on top), measured 1.8-2.1 s late and
    # 2.8-3.1 s gaps here; the bounds only catch a beat that stopped handing over, and the table shows the figures.
    assert len(found) >= seconds / 3  # beat kept sending through them
    assert late <= 4 * LEASE + 2.0
    assert gap <= 1.0 + 4 * LEASE + 2.0
