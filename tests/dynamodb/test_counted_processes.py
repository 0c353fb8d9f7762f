"""A semaphore between real processes, against the real endpoint: never more than N valid holders at once."""

from __future__ import annotations

import collections

import pytest

from ..worker_processes import worker_context
from . import processes
from .test_processes import collect

pytestmark = pytest.mark.processes

PROCESSES, PERMITS, ROUNDS = 5, 2, 12
forkserver = worker_context()


def test_never_more_than_n_processes_hold_a_permit_and_tokens_grow_per_permit(endpoint_url, table_name, key):
    results = forkserver.Queue()
    workers = [
        forkserver.Process(
            target=processes.take_permits, args=(endpoint_url, table_name, key, PERMITS, ROUNDS, results)
        )
        for _ in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    intervals = sorted(interval for batch in collect(results, workers) for interval in batch)

    assert len(intervals) == PROCESSES * ROUNDS
    valid = [interval for interval in intervals if interval[5]]
    events = sorted([(start, 1) for start, *_ in valid] + [(end, -1) for _, end, *_ in valid])
    open_now = most = 0
    for _, step in events:  # an end before a start at the same moment: sorted by (time, -1 < 1)
        open_now += step
        most = max(most, open_now)
    assert most <= PERMITS
    tokens = collections.defaultdict(list)
    for _, _, permit, token, _, _ in intervals:  # in order of their start
        tokens[permit].append(token)
    assert set(tokens) <= set(range(PERMITS))
    for issued in tokens.values():
        assert issued == sorted(set(issued))
    assert len({pid for *_, pid, _ in intervals}) == PROCESSES
