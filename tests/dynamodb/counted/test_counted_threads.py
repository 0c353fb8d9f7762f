"""Counted locks under real threads, each with its own client: never more than N holders, readers never with a writer.

Real time on the in-process store, so only safe-direction facts are asserted: overlaps that
never happen, tokens that only grow, and waits that all end (no deadlock) within generous
time-outs. Each interval runs from the acquire's return to the release's start, and counts
only if its lease was still held at its end.
"""

from __future__ import annotations

import collections
import random
import threading
import time
from dataclasses import dataclass

from dynalock_django.dynamodb import LockClient

ROUNDS = 6
PATIENT = 30.0  # a time-out no healthy run comes near: one reached is a deadlock


@dataclass(frozen=True)
class Interval:
    kind: str
    start: float
    end: float
    permit: int | None
    token: int


def run(workers: list[threading.Thread]) -> None:
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(2 * PATIENT)
        assert not worker.is_alive()


def overlapping(intervals: list[Interval]) -> int:
    """The most intervals open at one moment."""
    events = sorted([(i.start, 1) for i in intervals] + [(i.end, -1) for i in intervals], key=lambda e: (e[0], e[1]))
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


# Seconds a holder holds, then pauses before its next round: readers hold long and writers come
# between, so that writers meet readers in place.
HOLD = {"permit": (0.005, 0.02), "read": (0.03, 0.08), "write": (0.005, 0.02)}
PAUSE = {"permit": (0.01, 0.05), "read": (0.0, 0.02), "write": (0.05, 0.15)}


def hold(lease, kind: str, intervals: list[Interval], lock: threading.Lock) -> None:
    start = time.monotonic()
    time.sleep(random.uniform(*HOLD[kind]))
    end = time.monotonic()
    if lease.is_held():
        with lock:
            intervals.append(Interval(kind, start, end, lease.permit, lease.fencing_token))
    lease.release()


def test_never_more_than_n_holders_and_tokens_grow_per_permit(make_client, key):
    clients: list[LockClient] = [make_client(lease_duration=5.0, heartbeat_period=1.0) for _ in range(5)]
    intervals: list[Interval] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def work(client: LockClient) -> None:
        try:
            semaphore = client.semaphore(key, 2)
            for _ in range(ROUNDS // 2):  # the processes tier runs the same on every store
                hold(semaphore.acquire(timeout=PATIENT), "permit", intervals, lock)
        except BaseException as error:
            errors.append(error)

    run([threading.Thread(target=work, args=(client,)) for client in clients])
    assert errors == []
    assert len(intervals) == 5 * (ROUNDS // 2)
    assert overlapping(intervals) <= 2
    by_permit = collections.defaultdict(list)
    for interval in sorted(intervals, key=lambda i: i.start):
        by_permit[interval.permit].append(interval.token)
    assert set(by_permit) <= {0, 1}
    for tokens in by_permit.values():
        assert tokens == sorted(set(tokens))


def test_readers_never_overlap_a_writer_and_nobody_deadlocks(make_client, key):
    intervals: list[Interval] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def work(client: LockClient, kind: str) -> None:
        try:
            rw = client.readers_writer(key, max_readers=3)
            for _ in range(ROUNDS):
                acquire = rw.acquire_write if kind == "write" else rw.acquire_read
                hold(acquire(timeout=PATIENT), kind, intervals, lock)
        except BaseException as error:
            errors.append(error)

    kinds = ["read"] * 4 + ["write"] * 2
    clients = [make_client(lease_duration=5.0, heartbeat_period=1.0) for _ in kinds]
    run([threading.Thread(target=work, args=(client, kind)) for client, kind in zip(clients, kinds, strict=True)])
    assert errors == []
    assert len(intervals) == len(kinds) * ROUNDS
    writes = [i for i in intervals if i.kind == "write"]
    for write in writes:
        others = [i for i in intervals if i is not write and i.start < write.end and write.start < i.end]
        assert others == [], f"{write} overlapped {others}"
    assert overlapping([i for i in intervals if i.kind == "read"]) <= 3
    tokens = [w.token for w in sorted(writes, key=lambda w: w.start)]
    assert tokens == sorted(set(tokens))
