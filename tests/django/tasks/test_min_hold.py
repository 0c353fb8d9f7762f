"""``lock_task(min_hold=...)``: at most one run per schedule slot, however short the run (issue 42).

Three hosts (three clients of one in-process table, on one virtual clock) fire a 10 ms job at every
1 s slot, each a little late by its own jitter: without ``min_hold`` the first run is over before
the others fire, and they run it again (2 to 3 runs a slot when ``hold_until`` is made a no-op).
"""

from __future__ import annotations

import functools
import math
import random
import threading
from collections.abc import Iterator

import pytest

from dynalock_django.dynamodb import LockClient
from dynalock_django.dynamodb.clock import start_thread
from dynalock_django.tasks import current_token, lock_task
from dynalock_django.tasks import locked_task as locked_task_module
from dynalock_django.testing import LocksInMemory, locks_in_memory

LEASE, HEARTBEAT, REFRESH = 20.0, 5.0, 0.1
SLOTS, HOSTS, MIN_HOLD, MAX_JITTER = 60, 3, 0.8, 0.3
RUNS: list[tuple[int, float, int | None]] = []  # (slot, started, fencing token)
_host = threading.local()


@pytest.fixture
def memory(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocksInMemory]:
    RUNS.clear()
    with locks_in_memory(LEASE_DURATION=LEASE, HEARTBEAT_PERIOD=HEARTBEAT, REFRESH_PERIOD=REFRESH) as memory:
        # Each host thread is its own process: get_client() is that host's client.
        default = locked_task_module.get_client
        monkeypatch.setattr(locked_task_module, "get_client", lambda: getattr(_host, "client", None) or default())
        yield memory


def the_job(memory: LocksInMemory, start: float) -> None:
    now = memory.clock.monotonic()
    RUNS.append((math.floor(now - start), now, current_token()))
    memory.clock.wait(threading.Event(), 0.010)  # the 10 ms of work


def fire_every_slot(memory: LocksInMemory, client: LockClient, task: object, start: float, seed: int) -> None:
    _host.client = client
    jitter = random.Random(seed)
    for slot in range(SLOTS):
        fire_at = start + slot + jitter.uniform(0.0, MAX_JITTER)
        memory.clock.wait(threading.Event(), max(0.0, fire_at - memory.clock.monotonic()))
        task(memory, start)  # type: ignore[operator]


def run_three_hosts(memory: LocksInMemory, task: object) -> dict[int, int]:
    start = memory.clock.monotonic() + 1.0
    clients = [memory.new_client() for _ in range(HOSTS)]
    hosts = [
        start_thread(
            memory.clock,
            functools.partial(fire_every_slot, memory, client, task, start, seed),
            f"host-{seed}",
        )
        for seed, client in enumerate(clients)
    ]
    memory.advance(SLOTS + 2.0)
    for host in hosts:
        host.join(timeout=30)
        assert not host.is_alive()
    per_slot = {slot: 0 for slot in range(SLOTS)}
    for slot, _, _ in RUNS:
        per_slot[slot] += 1
    return per_slot


@lock_task("every-second", min_hold=MIN_HOLD)
def held_job(memory: LocksInMemory, start: float) -> None:
    the_job(memory, start)


@pytest.mark.timeout(120)
def test_three_hosts_firing_a_10ms_job_every_slot_run_it_exactly_once_per_slot(memory):
    per_slot = run_three_hosts(memory, held_job)
    assert per_slot == {slot: 1 for slot in range(SLOTS)}
    tokens = [token for _, _, token in sorted(RUNS, key=lambda run: run[1])]
    assert all(token is not None for token in tokens)
    assert tokens == sorted(set(tokens))  # strictly increasing: one holder at a time
    assert memory.client.get("every-second").is_released  # the last slot's hold ended in a release


def test_the_key_is_held_unrenewed_for_the_rest_of_min_hold_even_if_the_holder_dies(memory):
    host = memory.new_client()
    lease = host.acquire("slot")
    host.stop_renewing(lease, 3.0)
    host.close(release=False)  # the holder's process is gone: nothing renews or releases it
    waiter = memory.new_client()
    assert waiter.try_acquire("slot") is None
    memory.advance(2.9)
    assert waiter.try_acquire("slot") is None  # still held: its last lease has not passed on the waiter's clock
    memory.advance(0.2)
    assert waiter.try_acquire("slot") is not None  # taken over once it passed, with no release


def test_a_heartbeat_after_stop_renewing_does_not_renew_the_lease(memory):
    host = memory.new_client()
    lease = host.acquire("slot")
    host.stop_renewing(lease, HEARTBEAT * 6)  # a lease the heartbeat would renew twice in the wait below
    version = memory.client.get("slot").record_version_number
    memory.advance(HEARTBEAT * 2)
    assert memory.client.get("slot").record_version_number == version
    assert lease.release()  # still ours to release


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), float("inf"), "5", True])
def test_a_bad_min_hold_is_refused_when_decorating(value):
    from dynalock_django.exceptions import ConfigurationError

    with pytest.raises(ConfigurationError, match=r"lock_task\(min_hold\)=.*finite number of seconds"):
        lock_task(min_hold=value)
