"""The in-memory DynamoDB on a virtual clock: moto's backend behind real boto3 clients, faults from hooks."""

from __future__ import annotations

import asyncio
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import botocore.session
import pytest

from dynalock_django.dynamodb import (
    DynamoDBUnavailable,
    InMemoryDynamoDB,
    LockClient,
    LockTimeout,
    RetryBudgetWarning,
    VirtualClock,
)
from dynalock_django.dynamodb.aws.in_memory import CLIENT_CONFIG

from ...dynamodb_support import RequestCounter, unique

LEASE = 10.0
HEARTBEAT = 2.5


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def memory(virtual_clock: VirtualClock) -> InMemoryDynamoDB:
    return InMemoryDynamoDB(virtual_clock)


@pytest.fixture
def new_client(memory: InMemoryDynamoDB, virtual_clock: VirtualClock) -> Iterator[Callable[..., LockClient]]:
    table = unique("dynalock-memory")
    clients: list[LockClient] = []

    def build(**options: Any) -> LockClient:
        options.setdefault("lease_duration", LEASE)
        options.setdefault("heartbeat_period", HEARTBEAT)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RetryBudgetWarning)  # its time-outs cost virtual seconds
            client = LockClient(memory.client(), table, clock=virtual_clock, **options)
        if not clients:
            client.create_table()
        clients.append(client)
        return client

    yield build
    memory.faults.heal()
    for client in clients:
        client.close(release=False)
    clients[0].dynamodb.delete_table(TableName=table)


def test_a_live_holder_keeps_its_lock_across_many_virtual_leases(
    new_client: Callable[..., LockClient], virtual_clock: VirtualClock
) -> None:
    holder, waiter = new_client(), new_client()
    lease = holder.acquire("k")
    started = virtual_clock.monotonic()
    with pytest.raises(LockTimeout):
        waiter.acquire("k", timeout=5 * LEASE)  # the head of its line looks ten times a second
    assert virtual_clock.monotonic() - started >= 5 * LEASE
    assert lease.is_held()
    assert holder.get("k").record_version_number == lease.record_version_number  # type: ignore[union-attr]


def test_a_dead_holders_lock_is_taken_over_a_lease_after_its_last_renewal(
    new_client: Callable[..., LockClient], virtual_clock: VirtualClock
) -> None:
    holder, waiter = new_client(), new_client()
    dead = holder.acquire("k")
    holder.close(release=False)  # dies: nobody renews
    started = virtual_clock.monotonic()
    lease = waiter.acquire("k", timeout=3 * LEASE)
    waited = virtual_clock.monotonic() - started
    assert LEASE <= waited <= LEASE + 2 * waiter.refresh_period
    assert lease.fencing_token > dead.fencing_token


def test_a_lost_answer_is_a_write_that_landed_and_a_read_time_out_of_clock(
    new_client: Callable[..., LockClient], memory: InMemoryDynamoDB, virtual_clock: VirtualClock
) -> None:
    client = new_client()
    memory.faults.lose_answers(1)
    started = virtual_clock.monotonic()
    lease = client.acquire("k", timeout=LEASE)
    assert virtual_clock.monotonic() - started >= 2.0  # one read time-out
    assert lease.is_held()
    assert client.get("k").record_version_number == lease.record_version_number  # type: ignore[union-attr]
    assert memory.faults.injected == 1


def test_a_hung_store_carries_nothing_out_and_costs_a_read_time_out_a_request(
    new_client: Callable[..., LockClient], memory: InMemoryDynamoDB, virtual_clock: VirtualClock
) -> None:
    client = new_client(breaker_threshold=None)
    memory.faults.hang()
    started = virtual_clock.monotonic()
    with pytest.raises(DynamoDBUnavailable, match="injected"):
        client.try_acquire("k")
    assert virtual_clock.monotonic() - started >= 2.0
    memory.faults.heal()
    assert client.get("k") is None


def test_throttled_requests_are_retried_by_botocore_without_backing_off(
    new_client: Callable[..., LockClient], memory: InMemoryDynamoDB, virtual_clock: VirtualClock
) -> None:
    client = new_client()
    requests = RequestCounter(client.dynamodb)
    memory.faults.throttle(2)
    started = virtual_clock.monotonic()
    lease = client.acquire("k", timeout=LEASE)  # time enough for botocore's retries (acquire(timeout=0) has none)
    assert lease.is_held()
    assert requests.calls["UpdateItem"] == 3  # two refused, the third granted
    assert virtual_clock.monotonic() == started


def test_one_request_at_a_time_no_two_threads_hold_a_lock_at_once(memory: InMemoryDynamoDB) -> None:
    """Without the store's lock, moto checks a condition and writes in two steps: two grants can pass."""
    table = unique("dynalock-memory")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RetryBudgetWarning)
        clients = [
            # Waiters that poll often: their attempts race each other's and the holder's release.
            LockClient(memory.client(), table, lease_duration=LEASE, heartbeat_period=HEARTBEAT, refresh_period=0.05)
            for _ in range(4)
        ]
    clients[0].create_table()
    holding = threading.Lock()
    holders: list[int] = []
    overlaps: list[int] = []
    tokens: list[int] = []

    def work(client: LockClient) -> None:
        for _ in range(15):
            lease = client.acquire("contended", timeout=30)
            if not holding.acquire(blocking=False):
                overlaps.append(lease.fencing_token)
            else:
                holders.append(lease.fencing_token)
                tokens.append(lease.fencing_token)
                holding.release()
            lease.release()

    threads = [threading.Thread(target=work, args=(client,)) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    for client in clients:
        client.close()
    assert overlaps == []
    assert len(tokens) == 60
    assert tokens == sorted(tokens)  # granted in order...
    assert len(set(tokens)) == 60  # ...each once


def test_a_request_moto_does_not_know_is_refused_not_sent(memory: InMemoryDynamoDB) -> None:
    request = type("Request", (), {"url": "https://example.invalid/", "headers": {}, "body": b"", "method": "GET"})()
    with pytest.raises(RuntimeError, match="no answer"):
        memory.send(request)


@pytest.mark.parametrize("count", [0, -1, 1.5, True])
def test_a_fault_count_is_a_whole_number_of_requests(memory: InMemoryDynamoDB, count: Any) -> None:
    with pytest.raises(ValueError, match="1 or more"):
        memory.faults.lose_answers(count)


def test_a_coroutine_waiting_for_a_held_lock_moves_the_virtual_clock_and_its_wait_ends(
    new_client: Callable[..., LockClient], virtual_clock: VirtualClock
) -> None:
    holder, waiter = new_client(), new_client()
    dead = holder.acquire("k")
    holder.close(release=False)
    started = virtual_clock.monotonic()
    lease = asyncio.run(waiter.aacquire("k", timeout=3 * LEASE))
    assert virtual_clock.monotonic() - started >= LEASE
    assert lease.fencing_token > dead.fencing_token
    live = waiter.acquire("live")
    with pytest.raises(LockTimeout):
        asyncio.run(new_client().aacquire("live", timeout=3 * LEASE))
    assert live.is_held()


def test_clients_of_every_store_come_from_one_session_yet_keep_hooks_of_their_own() -> None:
    """A new botocore session costs about half of a new client's CPU: the in-memory clients share one."""
    first = InMemoryDynamoDB().client()
    with mock.patch.object(botocore.session.Session, "__init__", side_effect=AssertionError("a new session")):
        second = InMemoryDynamoDB().client()
        third = InMemoryDynamoDB(read_timeout=5).client()
    assert third.meta.config.read_timeout == 5
    assert second.meta.config.read_timeout == CLIENT_CONFIG["read_timeout"]
    seen: list[str] = []
    first.meta.events.register("before-call.dynamodb.ListTables", lambda **_: seen.append("first"))
    second.list_tables()
    assert seen == []  # a hook on one client is that client's alone
    first.list_tables()
    assert seen == ["first"]
