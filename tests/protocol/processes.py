"""Worker processes for the multi-process tests (started with the 'spawn' method)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ..dynamodb_support import make_dynamodb, short_lease_client


def increment_under_lock(endpoint_url: str, table_name: str, key: str, counter: str, rounds: int, results: Any) -> None:
    """Read-modify-write a counter file ``rounds`` times, each under the lock; report every interval."""
    client = short_lease_client(make_dynamodb(endpoint_url), table_name)
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
