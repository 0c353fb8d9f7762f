"""Mutual exclusion between real processes, against the real endpoint."""

from __future__ import annotations

import itertools
import os
import queue
import signal
import threading
import time

import pytest

from dynalock_django.dynamodb import LockTimeout
from dynalock_django.dynamodb.wire.waiters import parse_waiters

from ..dynamodb_support import HEARTBEAT, LEASE, wait_for
from ..worker_processes import worker_context
from . import processes

pytestmark = pytest.mark.processes

PROCESSES, ROUNDS = 8, 12
forkserver = worker_context()


def test_eight_processes_never_overlap_and_lose_no_update(endpoint_url, table_name, key, tmp_path):
    counter = tmp_path / "counter"
    counter.write_text("0")
    results = forkserver.Queue()
    workers = [
        forkserver.Process(
            target=processes.increment_under_lock,
            args=(endpoint_url, table_name, key, str(counter), ROUNDS, results),
        )
        for _ in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    intervals = sorted(interval for batch in collect(results, workers) for interval in batch)

    assert len(intervals) == PROCESSES * ROUNDS
    overlaps = [(a, b) for a, b in itertools.pairwise(intervals) if a[1] > b[0]]
    assert overlaps == []
    lost_updates = PROCESSES * ROUNDS - int(counter.read_text())
    assert lost_updates == 0
    tokens = [token for _, _, token, _, _ in intervals]
    assert all(earlier < later for earlier, later in itertools.pairwise(tokens))
    assert len({pid for _, _, _, pid, _ in intervals}) == PROCESSES
    assert all(released for *_, released in intervals)


def test_processes_waiting_in_line_get_the_lock_in_the_order_they_joined(endpoint_url, table_name, key, make_client):
    """The line is first come, first served across processes; an arrival after the release waits behind it."""
    holder = make_client()
    lease = holder.acquire(key)
    results = forkserver.Queue()
    workers = []
    for number in range(PROCESSES):
        workers.append(
            forkserver.Process(target=processes.wait_in_line, args=(endpoint_url, table_name, key, number, results))
        )
        workers[-1].start()
        wait_for(lambda count=number + 1: len(line_of(holder, key)) == count, 60)  # joined, in this order
    lease.release()
    assert holder.try_acquire(key) is None  # an arrival after the release: the line goes first
    granted = sorted(collect(results, workers))

    assert [number for _, _, _, number, _ in granted] == list(range(PROCESSES))
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(granted))  # no overlap
    tokens = [token for _, _, token, _, _ in granted]
    assert all(earlier < later for earlier, later in itertools.pairwise(tokens))
    assert all(released for *_, released in granted)


def line_of(client, key):
    info = client.get(key)
    return parse_waiters(info.raw_line) if info is not None else ()


def collect(results, workers, timeout=300.0):
    """One result per worker; fails at once, not at the time-out, when a worker dies without one."""
    batches, deadline = [], time.monotonic() + timeout
    while len(batches) < len(workers):
        try:
            batches.append(results.get(timeout=0.5))
        except queue.Empty:
            crashed = [w.exitcode for w in workers if w.exitcode not in (None, 0)]
            assert not crashed, f"worker processes exited with {crashed}"
            assert time.monotonic() < deadline, "workers did not finish in time"
    for worker in workers:
        worker.join(30)
        assert worker.exitcode == 0
    return batches


def test_a_killed_holder_is_taken_over_after_its_lease_and_not_before(endpoint_url, table_name, make_client, key):
    safe_until, acquired = forkserver.Value("d", 0.0), forkserver.Event()
    holder = forkserver.Process(
        target=processes.hold_and_report, args=(endpoint_url, table_name, key, safe_until, acquired, 60.0)
    )
    holder.start()
    assert acquired.wait(30)
    taken: list[float] = []
    waiter = make_client()

    def wait_for_the_lock() -> None:
        lease = waiter.acquire(key, timeout=10 * LEASE)
        taken.append(time.monotonic())
        lease.release()

    thread = threading.Thread(target=wait_for_the_lock)
    thread.start()
    time.sleep(3 * HEARTBEAT)  # the waiter polls while the holder renews
    assert not taken
    os.kill(holder.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    holder.join()
    thread.join(15)
    waiter.close()

    assert taken, "the waiter never took the lock over"
    # Never before the holder itself stopped trusting its lease (how soon after: test_acquisition.py).
    assert taken[0] >= safe_until.value
    assert taken[0] > killed_at


def test_a_heartbeating_holder_process_is_never_taken_over(endpoint_url, table_name, make_client, key):
    safe_until, acquired = forkserver.Value("d", 0.0), forkserver.Event()
    holder = forkserver.Process(
        target=processes.hold_and_report, args=(endpoint_url, table_name, key, safe_until, acquired, 4 * LEASE)
    )
    holder.start()
    assert acquired.wait(30)
    waiter = make_client()
    with pytest.raises(LockTimeout):
        waiter.acquire(key, timeout=3 * LEASE)
    holder.join(30)
    assert holder.exitcode == 0
    assert safe_until.value > 0, "the holder lost its lease or could not release it"
    lease = waiter.acquire(key, timeout=LEASE)
    lease.release()
    waiter.close()
