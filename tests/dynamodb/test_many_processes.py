"""Real processes locking random overlapping sets of hot keys, each set listed in a random order.

With acquire_many: no overlapping holders of a key, no lost update, fencing tokens strictly
increasing per key, and every process finishes without a single time-out (nobody waits while
holding, so nobody waits on a waiter). The same workload locking one key after another in the
caller's order must give up and retry on time-outs to finish at all: its figures are printed
beside the first's.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

import pytest

from ..worker_processes import worker_context
from . import processes
from .test_processes import collect

pytestmark = pytest.mark.processes

PROCESSES, ROUNDS, HOT_KEYS = 4, 10, 6
# One key after another is the control: it must time out and retry to finish at all, so each of its rounds
# costs several lease waits. A few rounds show it and still check every property.
CONTROL_ROUNDS = 5
forkserver = worker_context()


def rounds(together: bool) -> int:
    return ROUNDS if together else CONTROL_ROUNDS


def run(endpoint_url, table_name, key, tmp_path, *, together):
    hot_keys = [f"{key}-{i}" for i in range(HOT_KEYS)]
    for hot_key in hot_keys:
        (tmp_path / hot_key).write_text("0 0")
    results = forkserver.Queue()
    workers = [
        forkserver.Process(
            target=processes.lock_random_sets,
            args=(endpoint_url, table_name, hot_keys, str(tmp_path), rounds(together), together, results),
        )
        for _ in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    reports = collect(results, workers)  # every process finished
    by_key = defaultdict(list)
    for report in reports:
        for hot_key, *interval in report["intervals"]:
            by_key[hot_key].append(tuple(interval))
    for hot_key, intervals in by_key.items():
        intervals.sort()
        assert [(a, b) for a, b in itertools.pairwise(intervals) if a[1] > b[0]] == [], hot_key  # no overlap
        tokens = [token for _, _, token, _ in intervals]
        assert all(earlier < later for earlier, later in itertools.pairwise(tokens)), hot_key
        value, _ = map(int, (tmp_path / hot_key).read_text().split())
        assert value == len(intervals), hot_key  # no lost update
    assert sum(report["fenced_out"] for report in reports) == 0
    figures = {
        "lockings": sum(len(intervals) for intervals in by_key.values()),
        "timeouts": sum(report["timeouts"] for report in reports),
        "seconds waiting": round(sum(report["waited"] for report in reports), 2),
    }
    print(f"{'acquire_many' if together else 'one by one, random order'}: {figures}")
    return figures


@pytest.mark.parametrize("together", [True, False], ids=["acquire_many", "one_by_one"])
def test_processes_locking_random_overlapping_sets_never_overlap_lose_updates_or_deadlock(
    endpoint_url, table_name, key, tmp_path, together
):
    figures = run(endpoint_url, table_name, key, tmp_path, together=together)
    assert figures["lockings"] >= PROCESSES * rounds(together) * 2
    if together:
        assert figures["timeouts"] == 0  # acquire_many never gave up: nobody waited on a waiter
