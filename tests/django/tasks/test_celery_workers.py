"""lock_task under real Celery workers (prefork, 2 processes) on a real Redis broker.

The tasks record their own runs (start, end, token, pid) in a file; the properties are read from it:
no two runs of a key overlap, tokens only grow, every copy either ran or was a visible skip, and a
worker killed mid-task frees its key after about one lease, when the redelivered copy runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from celery import Celery

from dynalock_django.client import get_client

from ...dynamodb_support import LEASE, PATIENCE
from .environment import BROKER, RUNS, VISIBILITY
from .test_task_chaos import with_share_of
from .workers import count_lines, overlaps, read_runs, redis_url, tokens_increase

pytestmark = [
    pytest.mark.processes,
    pytest.mark.uses_dynalock,
    pytest.mark.slow,
    with_share_of("celery"),
]
__all__ = ["redis_url"]  # the fixture

ROOT = Path(__file__).resolve().parents[3]
JOB = "tests.django.tasks.jobs.celery_job"


@pytest.fixture
def worker_env() -> dict[str, str]:
    """More environment for the worker (a test parametrizes it)."""
    return {}


@pytest.fixture
def worker(dynalock, redis_url, tmp_path, worker_env):
    """A Celery worker (prefork, 2 child processes) on the test's broker and lock table; its runs file."""
    runs = tmp_path / "runs"
    env = {
        **os.environ,
        **worker_env,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DYNALOCK_TEST_SETTINGS": json.dumps(dynalock),
        BROKER: redis_url,
        RUNS: str(runs),
    }
    command = [sys.executable, "-m", "celery", "-A", "tests.django.tasks.celery_app", "worker", "--pool=prefork"]
    command += ["-c", "2", "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "warning"]
    log = (tmp_path / "worker.log").open("w")
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    sender = Celery("sender", broker=redis_url)
    try:
        yield sender, runs
    finally:
        process.send_signal(signal.SIGTERM)  # a warm shutdown: the children finish what they run
        try:
            process.wait(timeout=3 * PATIENCE)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def wait_until(condition, seconds: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"{what}; worker log:\n{log.read_text()[-3000:]}"
        time.sleep(0.1)


def test_copies_of_a_task_never_overlap_and_every_skip_is_recorded(worker, tmp_path):
    sender, runs = worker
    sent = {1: 10, 2: 6}
    for account, copies in sent.items():
        for _ in range(copies):
            sender.send_task(JOB, args=(account, 0.3))
    skipped = Path(str(runs) + ".skipped")
    total = sum(sent.values())
    wait_until(
        lambda: count_lines(runs) + count_lines(skipped) >= total,
        60,
        "not every copy ran or skipped",
        tmp_path / "worker.log",
    )

    done = read_runs(runs)
    assert len(done) + count_lines(skipped) == total
    assert overlaps(done) == 0
    assert tokens_increase(done)
    assert count_lines(skipped) > 0  # two workers, one key at a time: some copies met a live run
    assert {run.name for run in done} == {"celery-1", "celery-2"}
    assert len({run.pid for run in done}) >= 1
    client = get_client()
    assert all(client.get(key).is_released for key in _keys(client))  # no stuck key
    print(f"\nceleryworkers: runs={len(done)} skips={count_lines(skipped)} overlaps=0 stuck=0")


def test_a_killed_worker_frees_its_key_after_about_a_lease_and_the_redelivered_copy_runs(worker, tmp_path):
    sender, runs = worker
    sender.send_task(JOB, args=(3, 60))
    started = Path(str(runs) + ".started")
    wait_until(lambda: count_lines(started) >= 1, 30, "the task did not start", tmp_path / "worker.log")
    [line] = started.read_text().splitlines()
    _, pid, token = line.split()

    Path(str(runs) + ".killed").touch()  # the redelivered copy does not sleep again
    os.kill(int(pid), signal.SIGKILL)
    killed_at = time.monotonic()
    wait_until(lambda: count_lines(runs) >= 1, LEASE + 30, "the redelivered copy did not run", tmp_path / "worker.log")

    [run] = read_runs(runs)
    assert run.name == "celery-3"
    assert run.pid != int(pid)
    assert run.token > int(token)
    # When the broker handed the copy to a worker process again, and how long its lock then took
    [_, (_, _, redelivered)] = [line.split() for line in Path(str(runs) + ".prerun").read_text().splitlines()]
    redelivered_after = float(redelivered) - killed_at
    freed_after = run.started - killed_at
    assert run.started - float(redelivered) >= LEASE * 0.9  # the dead run's lease was waited out: never two at once
    assert not Path(str(runs) + ".skipped").exists()  # a dead holder is not a reason to skip
    client = get_client()
    assert all(client.get(key).is_released for key in _keys(client))
    print(
        f"\nceleryworkers: killed=1 redelivered after {redelivered_after:.2f}s, ran after {freed_after:.2f}s "
        f"= {freed_after / LEASE:.2f} leases ({(run.started - float(redelivered)) / LEASE:.2f} waiting for the key)"
    )


@pytest.mark.parametrize("worker_env", [{VISIBILITY: "2"}])
def test_a_copy_the_broker_hands_out_again_while_the_task_runs_is_skipped_visibly(worker, tmp_path):
    sender, runs = worker
    seconds = 8.0  # four visibility timeouts, eight leases: renewed all along
    sender.send_task(JOB, args=(4, seconds))
    wait_until(lambda: count_lines(runs) >= 1, seconds + 30, "the task did not run", tmp_path / "worker.log")
    time.sleep(2)  # a copy handed out late would begin by now

    begun = count_lines(Path(str(runs) + ".prerun"))
    skipped = count_lines(Path(str(runs) + ".skipped"))
    done = read_runs(runs)
    assert begun >= 2, "the broker did not hand the running task out again: the test proves nothing"
    assert [run.name for run in done] == ["celery-4"]  # it ran once
    assert skipped == begun - 1  # every other copy met the live lease, and said so
    assert overlaps(done) == 0
    client = get_client()
    assert all(client.get(key).is_released for key in _keys(client))
    print(f"\nceleryworkers: redelivered while running: copies={begun} runs=1 skips={skipped} overlaps=0 stuck=0")


def _keys(client) -> list[str]:
    return [lock.key for lock in client.scan()]
