from __future__ import annotations

import threading
import time

import pytest

from dynalock_django.dynamodb import LockTimeout
from dynalock_django.dynamodb.wire.item import FENCING_TOKEN, IS_RELEASED, OWNER_NAME

from ...dynamodb_support import LEASE, PATIENCE, RequestCounter, without_old_item_on_refusal

pytestmark = pytest.mark.stores


def test_uncontended_acquire_and_release_cost_two_requests(make_client, dynamodb, key):
    counter = RequestCounter(dynamodb)
    client = make_client(dynamodb, lease_duration=60.0, heartbeat_period=15.0)  # no renewal in between, however slow
    lease = client.acquire(key)
    lease.release()
    assert dict(counter.calls) == {"UpdateItem": 2}


def test_acquire_grants_a_lease_with_token_owner_and_data(make_client, dynamodb, key):
    client = make_client(dynamodb)
    with client.lock(key, data=b"\x00payload") as lease:
        assert lease.is_held()
        assert 0 < lease.remaining() <= LEASE
        assert lease.owner_name == client.owner_name
        assert lease.data == b"\x00payload"
        stored = client.get(key)
        assert stored.owner_name == client.owner_name
        assert stored.record_version_number == lease.record_version_number
        assert stored.fencing_token == lease.fencing_token
        assert stored.data == b"\x00payload"
        assert not stored.is_released
    assert not lease.is_held()
    assert lease.remaining() == 0


def test_failed_try_acquire_costs_one_request_and_names_the_holder(make_client, dynamodb, key, store):
    holder = make_client()
    lease = holder.acquire(key)
    counter = RequestCounter(dynamodb)
    waiter = make_client(dynamodb)
    assert waiter.try_acquire(key) is None
    assert dict(counter.calls) == store.refused_update_costs
    lease.release()


def test_failed_try_acquire_falls_back_to_one_read_when_the_endpoint_hides_the_item(make_client, dynamodb, key):
    holder = make_client()
    lease = holder.acquire(key)
    counter = RequestCounter(dynamodb)
    waiter = make_client(dynamodb)
    with without_old_item_on_refusal(dynamodb), pytest.raises(LockTimeout) as caught:
        waiter.acquire(key, timeout=0)
    assert dict(counter.calls) == {"UpdateItem": 1, "GetItem": 1}
    assert caught.value.holder.owner_name == holder.owner_name
    lease.release()


def test_fencing_tokens_strictly_increase_across_release_and_reacquire(make_client, key):
    first, second = make_client(), make_client()
    tokens = []
    for client in [first, second, first, second, first]:
        with client.lock(key) as lease:
            tokens.append(lease.fencing_token)
    assert tokens == sorted(set(tokens))
    assert len(tokens) == 5


def test_release_keeps_the_item_and_its_token(make_client, dynamodb, key):
    client = make_client(dynamodb)
    lease = client.acquire(key)
    assert lease.release() is True
    raw = dynamodb.get_item(TableName=client.table_name, Key={"key": {"S": key}}, ConsistentRead=True)["Item"]
    assert raw[IS_RELEASED] == {"S": "1"}
    assert raw[FENCING_TOKEN] == {"N": str(lease.fencing_token)}
    assert raw[OWNER_NAME] == {"S": client.owner_name}


def test_acquire_waits_for_release_by_another_client(make_client, key):
    holder, waiter = make_client(), make_client()
    lease = holder.acquire(key)
    threading.Timer(0.3, lease.release).start()
    started = time.monotonic()
    with waiter.lock(key, timeout=5) as second:
        waited = time.monotonic() - started
        assert second.fencing_token > lease.fencing_token
    assert waited > 0.25  # not before the release at 0.3 s (the poll delays are in test_acquisition.py)


def test_acquire_times_out_naming_the_holder(make_client, key):
    holder, waiter = make_client(), make_client()
    lease = holder.acquire(key)
    started = time.monotonic()
    with pytest.raises(LockTimeout) as caught:
        waiter.acquire(key, timeout=0.4)
    waited = time.monotonic() - started
    assert 0.4 <= waited < 0.4 + PATIENCE
    assert caught.value.holder.owner_name == holder.owner_name
    assert holder.owner_name in str(caught.value)
    assert lease.is_held()
    lease.release()


def test_threads_of_one_client_wait_locally_without_polling(make_client, dynamodb, key):
    client = make_client(dynamodb)
    counter = RequestCounter(dynamodb)
    lease = client.acquire(key)
    got: list[int] = []

    def second_thread() -> None:
        with client.lock(key, timeout=5) as other:
            got.append(other.fencing_token)

    thread = threading.Thread(target=second_thread)
    thread.start()
    time.sleep(1.2)  # more than a heartbeat period passes while it waits
    assert counter.calls["GetItem"] == 0
    before_release = counter.calls["UpdateItem"] + counter.renewals["UpdateItem"]
    lease.release()
    thread.join(5)
    assert got
    assert got[0] > lease.fencing_token
    # heartbeats (one every 0.25 s) + release + the waiter's acquire and release
    assert before_release <= 1 + int(1.2 / 0.25) + 1
    assert counter.calls["GetItem"] == 0


def test_threads_of_one_client_waiting_at_once_each_get_the_lock_in_turn(make_client, dynamodb, key):
    """The key's turn passes from each waiting thread to the next: every one of them is granted the lock."""
    client = make_client(dynamodb)
    lease = client.acquire(key)
    got: list[int] = []

    def waiter() -> None:
        with client.lock(key, timeout=10) as other:
            got.append(other.fencing_token)

    threads = [threading.Thread(target=waiter) for _ in range(3)]
    for thread in threads:
        thread.start()
    time.sleep(0.3)  # they arrive while it is held: one waits for the holder, the others for their turn
    lease.release()
    for thread in threads:
        thread.join(15)
    assert len(got) == 3
    assert got == sorted(got)  # granted one after another: each token above the one before
    assert got[0] > lease.fencing_token


def test_try_acquire_on_a_lock_held_by_this_client_sends_nothing(make_client, dynamodb, key):
    client = make_client(dynamodb)
    lease = client.acquire(key)
    counter = RequestCounter(dynamodb)
    assert client.try_acquire(key) is None
    assert counter.total == 0
    lease.release()


def test_waiters_poll_with_reads_not_writes(make_client, dynamodb, key):
    holder = make_client()
    lease = holder.acquire(key)
    counter = RequestCounter(dynamodb)
    waiter = make_client(dynamodb)
    with pytest.raises(LockTimeout):
        waiter.acquire(key, timeout=0.6)
    # The refused write and the join of the line; then, at the head of it, a refresh of its entry every
    # line period (twice refresh_period: 0.2 s), and the leave when it gives up (perhaps after this count).
    assert 2 <= counter.calls["UpdateItem"] <= 2 + 3 + 1
    # The head's looks are reads 0.05 to 0.1 s apart (refresh_period, at most 0.1 s): a handful, never a storm
    assert 1 <= counter.calls["GetItem"] <= 30
    lease.release()
