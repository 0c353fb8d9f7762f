"""Completion records: a lease released with a value kept beside its lock, in one write only its live holder makes."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from dynalock_django.dynamodb import InMemoryDynamoDB, LockClient, LockLost, RetryBudgetWarning, VirtualClock
from dynalock_django.dynamodb.aws.store import Refused
from dynalock_django.dynamodb.records import record_item

from ...dynamodb_support import FaultInjector, RequestCounter, unique

LEASE = 10.0
DAY = 86400.0


@pytest.fixture
def memory(virtual_clock: VirtualClock) -> InMemoryDynamoDB:
    return InMemoryDynamoDB(virtual_clock)


@pytest.fixture
def new_client(memory: InMemoryDynamoDB, virtual_clock: VirtualClock) -> Iterator[Callable[..., LockClient]]:
    table = unique("dynalock-records")
    clients: list[LockClient] = []

    def build(**options: Any) -> LockClient:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RetryBudgetWarning)  # its time-outs cost virtual seconds
            client = LockClient(
                memory.client(), table, clock=virtual_clock, lease_duration=LEASE, heartbeat_period=2.5, **options
            )
        if not clients:
            client.create_table()
        clients.append(client)
        return client

    yield build
    memory.faults.heal()
    for client in clients:
        client.close(release=False)
    clients[0].dynamodb.delete_table(TableName=table)


def test_complete_releases_the_lock_and_keeps_the_value_beside_it_in_one_request(
    new_client: Callable[..., LockClient], virtual_clock: VirtualClock
) -> None:
    holder, other = new_client(), new_client()
    lease = holder.acquire("order-1")
    counted = RequestCounter(holder.dynamodb)
    holder.complete(lease, b"done", keep_for=DAY)
    assert counted.calls == {"TransactWriteItems": 1}
    assert lease.state == "released"

    counted.reset()
    record = holder.get_record("order-1")
    assert counted.calls == {"GetItem": 1}
    assert record is not None
    assert (record.value, record.fencing_token) == (b"done", lease.fencing_token)
    assert record.expires_at == pytest.approx(virtual_clock.time() + DAY, abs=1)
    assert other.try_acquire("order-1") is not None  # the lock itself is free


def test_the_record_reads_as_a_released_lock_item_with_its_ttl(
    new_client: Callable[..., LockClient], virtual_clock: VirtualClock
) -> None:
    client = new_client()
    client.complete(client.acquire("k"), b"v", keep_for=600)
    as_lock = client.get("k" + record_item.RECORD_SUFFIX)
    assert as_lock is not None
    assert as_lock.is_released
    assert not as_lock.problems
    stored = client.dynamodb.get_item(TableName=client.table_name, Key={"key": {"S": "k#result"}})["Item"]
    assert int(stored["ttl"]["N"]) == int(stored[record_item.EXPIRES_AT]["N"]) >= virtual_clock.time() + 600


def test_a_holder_that_lost_its_lock_cannot_complete(new_client: Callable[..., LockClient]) -> None:
    """Its safe time has not run out (a paused holder's view), but another took the lock: the write is refused."""
    holder, operator = new_client(), new_client()
    lease = holder.acquire("k")
    taken = operator.take_over(operator.get("k"))  # type: ignore[arg-type]
    with pytest.raises(LockLost):
        holder.complete(lease, b"late", keep_for=DAY)
    assert holder.get_record("k") is None
    assert lease.state == "lost"
    operator.complete(taken, b"theirs", keep_for=DAY)
    assert holder.get_record("k").value == b"theirs"  # type: ignore[union-attr]


def test_a_lease_whose_safe_time_ran_out_completes_nothing(
    new_client: Callable[..., LockClient], memory: InMemoryDynamoDB, virtual_clock: VirtualClock
) -> None:
    holder = new_client(breaker_threshold=None)  # its renewals' time-outs must not shut its later reads out
    lease = holder.acquire("k")
    memory.faults.hang()  # no renewal lands
    virtual_clock.advance(LEASE + 1)
    memory.faults.heal()
    counted = RequestCounter(holder.dynamodb)
    with pytest.raises(LockLost):
        holder.complete(lease, b"late", keep_for=DAY)
    assert counted.calls == {}
    assert holder.get_record("k") is None


def test_without_transactions_the_record_is_written_then_the_lease_released(
    new_client: Callable[..., LockClient],
) -> None:
    holder = new_client()
    FaultInjector(holder.dynamodb).fail("TransactWriteItems", "UnknownOperationException", 400, times=9)
    counted = RequestCounter(holder.dynamodb)
    lease = holder.acquire("k")
    holder.complete(lease, b"one", keep_for=DAY)
    assert counted.calls == {"UpdateItem": 3, "TransactWriteItems": 1}  # the grant, the refused transaction, two
    assert lease.state == "released"
    assert holder.get_record("k").value == b"one"  # type: ignore[union-attr]
    counted.reset()
    holder.complete(holder.acquire("j"), b"two", keep_for=DAY)
    assert counted.calls == {"UpdateItem": 3}  # the store said once that it has no transactions


def test_an_earlier_holders_record_never_replaces_a_later_ones(new_client: Callable[..., LockClient]) -> None:
    client = new_client()
    later = client.acquire("k")
    client.complete(later, b"later", keep_for=DAY)
    earlier = record_item.store(
        client.layout, ("k", None), owner_name="old", fencing_token=later.fencing_token - 1, value=b"x", expires_at=9e9
    )
    with pytest.raises(Refused):
        client.store.update(earlier)
    assert client.get_record("k").value == b"later"  # type: ignore[union-attr]


def test_an_expired_or_unreadable_record_is_none(
    new_client: Callable[..., LockClient], virtual_clock: VirtualClock
) -> None:
    client = new_client()
    client.complete(client.acquire("k"), b"v", keep_for=60)
    virtual_clock.advance(61)  # DynamoDB's TTL deletes days late: the expiry is read, not trusted to it
    assert client.get_record("k") is None
    client.dynamodb.put_item(
        TableName=client.table_name, Item={"key": {"S": "h#result"}, "result": {"S": "x"}, "expiresAt": {"N": "9e99"}}
    )
    assert client.get_record("h") is None


@pytest.mark.parametrize("keep_for", [0, -1, float("inf"), True, "1"])
def test_complete_refuses_a_bad_keep_for(new_client: Callable[..., LockClient], keep_for: Any) -> None:
    client = new_client()
    lease = client.acquire("k")
    with pytest.raises(ValueError, match="keep_for"):
        client.complete(lease, b"v", keep_for=keep_for)
    assert lease.is_held()
