"""Worker processes for the multi-process tests (forked from the fork server of tests/worker_processes.py)."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

from dynalock_django.dynamodb import DynamoDBUnavailable, LockTimeout

from ..dynamodb_support import PATIENCE, make_dynamodb, short_lease_client


def patient_client(endpoint_url: str, table_name: str) -> Any:
    """A short-lease client whose requests may wait seconds for an answer: a loaded machine slows the
    endpoint, and these workers test exclusion, not how fast a failing endpoint is noticed."""
    return short_lease_client(make_dynamodb(endpoint_url, read_timeout=PATIENCE), table_name)


def increment_under_lock(endpoint_url: str, table_name: str, key: str, counter: str, rounds: int, results: Any) -> None:
    """Read-modify-write a counter file ``rounds`` times, each under the lock; report every interval."""
    client = patient_client(endpoint_url, table_name)
    intervals = []
    path = Path(counter)
    for _ in range(rounds):
        lease = client.acquire(key, timeout=120)
        held_from = time.monotonic()
        value = int(path.read_text())
        time.sleep(0.002)  # widen the window a broken lock would need to lose an update
        path.write_text(str(value + 1))
        held_until = time.monotonic()
        # Best effort, so that a broken lock shows up as overlapping intervals, not as a crash.
        released = lease.release(best_effort=True)
        intervals.append((held_from, held_until, lease.fencing_token, os.getpid(), released))
    client.close()
    results.put(intervals)


def hold_and_report(
    endpoint_url: str, table_name: str, key: str, safe_until: Any, acquired: Any, hold_for: float
) -> None:
    """Hold ``key``, publishing the lease's safe_until, until killed or ``hold_for`` passes."""
    client = short_lease_client(make_dynamodb(endpoint_url), table_name)
    lease = client.acquire(key, timeout=30)
    acquired.set()
    held_checks = []
    deadline = time.monotonic() + hold_for
    while time.monotonic() < deadline:
        safe_until.value = lease.safe_until
        held_checks.append(lease.is_held())
        time.sleep(0.001)
    safe_until.value = -1.0 if not all(held_checks) else lease.safe_until
    released = lease.release()
    safe_until.value = safe_until.value if released else -2.0
    client.close()


def lock_random_sets(
    endpoint_url: str, table_name: str, hot_keys: list[str], counters: str, rounds: int, together: bool, results: Any
) -> None:
    """Lock random sets of 2-5 hot keys, each listed in a random order, and read-modify-write each key's counter.

    ``together``: with acquire_many; otherwise one acquire after another in that order, giving up
    (releasing what it holds and starting again) when one times out, as callers without it must.
    A counter file holds its value and the last fencing token written: a write with a token not
    above it would be refused by a fenced store, and is counted instead.
    """
    rng = random.Random(os.getpid())
    client = patient_client(endpoint_url, table_name)
    intervals, timeouts, waited, fenced_out = [], 0, 0.0, 0
    for _ in range(rounds):
        keys = rng.sample(hot_keys, rng.randint(2, min(5, len(hot_keys))))
        started = time.monotonic()
        group = client.acquire_many(keys, timeout=120) if together else None
        leases = list(group) if group is not None else None
        while leases is None:
            leases, timeouts = _acquire_in_order(client, keys, rng, timeouts)
        held_from = time.monotonic()
        waited += held_from - started
        for lease in leases:
            path = Path(counters) / lease.key
            value, last_token = map(int, path.read_text().split())
            time.sleep(0.005)  # widen the window a broken lock would need to lose an update
            if lease.fencing_token > last_token:
                path.write_text(f"{value + 1} {lease.fencing_token}")
            else:
                fenced_out += 1
        held_until = time.monotonic()  # every key of the set was held from held_from to here
        intervals.extend((lease.key, held_from, held_until, lease.fencing_token, os.getpid()) for lease in leases)
        if group is not None:
            group.release(best_effort=True)  # one transaction
        for lease in leases if group is None else []:
            lease.release(best_effort=True)
    client.close()
    results.put({"intervals": intervals, "timeouts": timeouts, "waited": waited, "fenced_out": fenced_out})


def _acquire_in_order(client: Any, keys: list[str], rng: random.Random, timeouts: int) -> tuple[list[Any] | None, int]:
    held = []
    for key in keys:
        try:
            held.append(client.acquire(key, timeout=0.5))
        except (LockTimeout, DynamoDBUnavailable):
            for lease in held:
                lease.release(best_effort=True)
            time.sleep(rng.uniform(0, 0.1))
            return None, timeouts + 1
    return held, timeouts


def take_permits(endpoint_url: str, table_name: str, name: str, permits: int, rounds: int, results: Any) -> None:
    """Take a permit of semaphore ``name`` ``rounds`` times, hold it a moment; report every interval.

    An interval runs from the acquire's return to the release's start, with whether the lease was
    still held at its end (a lease that ran out may overlap, by the guarantees, and is not counted).
    """
    rng = random.Random(os.getpid())
    client = patient_client(endpoint_url, table_name)
    semaphore = client.semaphore(name, permits)
    intervals = []
    for _ in range(rounds):
        lease = semaphore.acquire(timeout=120)
        held_from = time.monotonic()
        time.sleep(rng.uniform(0.005, 0.03))
        held_until = time.monotonic()
        still_held = lease.is_held()
        lease.release(best_effort=True)
        intervals.append((held_from, held_until, lease.permit, lease.fencing_token, os.getpid(), still_held))
    client.close()
    results.put(intervals)


def wait_in_line(endpoint_url: str, table_name: str, key: str, number: int, results: Any) -> None:
    """Wait for the lock (joining its line), hold it a moment, release it; report when, with which token."""
    client = patient_client(endpoint_url, table_name)
    lease = client.acquire(key, timeout=120)
    held_from = time.monotonic()
    time.sleep(0.01)
    held_until = time.monotonic()
    released = lease.release(best_effort=True)
    results.put((held_from, held_until, lease.fencing_token, number, released))
    client.close()
