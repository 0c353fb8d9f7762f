"""acquire_many against real endpoints: all or none, its requests, waiting on the held keys only, takeover, chunks.

moto has transactions; dynalite has none, so there the same calls take the keys one by one.
The decisions themselves are unit-tested on a fake clock in test_group_acquisition.py.
"""

from __future__ import annotations

import json
import logging
import threading
import warnings
from typing import Any

import pytest

from dynalock_django.dynamodb import (
    DynamoDBUnavailable,
    InvalidLockRequest,
    Lease,
    LeaseGroup,
    LockLost,
    LockTimeout,
    RetryBudgetWarning,
    VirtualClock,
)

from ...dynamodb_support import (
    HEARTBEAT,
    LEASE,
    PATIENCE,
    FaultInjector,
    RequestCounter,
    make_dynamodb,
    unique,
    wait_for,
)
from ..clocks import TICK
from .test_dead_holder_takeover import abandon

pytestmark = pytest.mark.stores


def keys(count: int, prefix: str = "m") -> list[str]:
    base = unique(prefix)
    return [f"{base}-{i:04d}" for i in range(count)]


def updated_keys(dynamodb) -> list[str]:
    """The keys of the UpdateItems this botocore client sends, in order."""
    sent: list[str] = []
    dynamodb.meta.events.register(
        "provide-client-params.dynamodb.UpdateItem", lambda params, **_: sent.append(params["Key"]["key"]["S"])
    )
    return sent


def patient_client(make_client, endpoint_url):
    """A client whose requests may take seconds (moto runs 100-item transactions slowly), renewing nothing meanwhile."""
    dynamodb = make_dynamodb(endpoint_url, read_timeout=10)
    return make_client(dynamodb, lease_duration=120, heartbeat_period=40), dynamodb


def held_by(client, names) -> set[str]:
    """The keys among ``names`` whose item says ``client`` holds them now."""
    return {
        name
        for name in names
        if (info := client.get(name)) and not info.is_released and info.owner_name == client.owner_name
    }


@pytest.mark.requires("transactions")
def test_up_to_100_free_keys_are_one_transaction_and_one_read_released_in_one_transaction(make_client, endpoint_url):
    names = keys(100)
    client, dynamodb = patient_client(make_client, endpoint_url)
    counter = RequestCounter(dynamodb)
    group = client.acquire_many(reversed(names), timeout=PATIENCE)
    assert dict(counter.calls) == {"TransactWriteItems": 1, "BatchGetItem": 1}
    assert [lease.key for lease in group] == names  # sorted
    for name in names[::17]:
        stored = client.get(name)
        assert (stored.owner_name, stored.fencing_token) == (client.owner_name, group.fencing_tokens[name])
        assert stored.record_version_number == group[name].record_version_number
    counter.reset()
    assert group.release() is True
    assert dict(counter.calls) == {"TransactWriteItems": 1}
    assert all(client.get(name).is_released for name in names[::17])


def test_one_key_is_the_single_acquire_write(make_client, dynamodb):
    client = make_client(dynamodb)
    counter = RequestCounter(dynamodb)
    group = client.acquire_many([unique()])
    assert dict(counter.calls) == {"UpdateItem": 1}
    group.release()


def test_without_transactions_the_keys_are_taken_one_by_one_in_sorted_order(make_client, dynamodb, store, caplog):
    names = keys(5)
    client = make_client(dynamodb, lease_duration=30, heartbeat_period=5)  # no renewal among the writes counted
    if store.supports("transactions"):  # act like dynalite: the answer it really gives
        FaultInjector(dynamodb).fail("TransactWriteItems", "UnknownOperationException", times=1, message="")
    counter = RequestCounter(dynamodb)
    sent = updated_keys(dynamodb)
    with caplog.at_level(logging.WARNING, "dynalock_django.acquire"):
        first = client.acquire_many(reversed(names))
        first.release()
        counter.reset()
        second = client.acquire_many(names[::-1])
    assert dict(counter.calls) == {"UpdateItem": 5}  # the store said so once: no transaction is tried again
    assert sent == names * 3  # acquire, release, acquire: each in sorted order
    assert [lease.key for lease in second] == names
    assert sum("no transactions" in record.message for record in caplog.records) == 1
    second.release()


def test_a_held_key_refuses_the_whole_set_and_leaves_none_of_it_held(make_client, dynamodb, store):
    names = keys(3)
    holder, waiter = make_client(), make_client(dynamodb)
    lease = holder.acquire(names[1])
    counter = RequestCounter(dynamodb)
    assert waiter.try_acquire_many(names) is None
    if store.supports("transactions"):
        assert dict(counter.calls) == {"TransactWriteItems": 1}
    else:  # the first key taken, the second refused (and read), the first released
        assert dict(counter.calls) == {"TransactWriteItems": 1, "UpdateItem": 3, "GetItem": 1}
    assert held_by(waiter, names) == set()
    with pytest.raises(LockTimeout) as caught:
        waiter.acquire_many(names, timeout=3 * 0.1)
    assert repr(names[1]) in str(caught.value)
    assert holder.owner_name in str(caught.value)
    assert [h.key for h in caught.value.holders] == [names[1]]
    assert held_by(waiter, names) == set()
    lease.release()


def test_waiting_reads_only_the_held_keys_and_takes_all_once_they_are_free(make_client, dynamodb):
    names = keys(4)
    # Leases no loaded machine's slow renewal loses (the moto server once took 0.7 s a renewal): what is
    # asserted is the wait and its reads, and the holder lets go by releasing.
    patient = {"lease_duration": 60, "heartbeat_period": 15}
    holder, waiter = make_client(**patient), make_client(dynamodb, **patient)
    held = holder.acquire_many([names[0], names[2]])
    read: list[str] = []
    batches: list[set[str]] = []
    # The holder lets go once the waiter has read while waiting (not after a set time: a busy machine
    # could start the waiter after the release, and there would be no waiting to look at).
    releaser = threading.Thread(target=held.release)

    def release_once() -> None:
        if releaser.ident is None:  # not started yet
            releaser.start()

    # The held keys are read one by one (GetItem) or together (BatchGetItem); a transaction's grant reads
    # every key's token back with one BatchGetItem at the end. (A handler's answer would replace the request.)
    def one_read(params: dict[str, Any], **_: Any) -> None:
        read.append(params["Key"]["key"]["S"])
        release_once()

    def batch_read(params: dict[str, Any], **_: Any) -> None:
        batches.append({key["key"]["S"] for request in params["RequestItems"].values() for key in request["Keys"]})
        release_once()

    dynamodb.meta.events.register("provide-client-params.dynamodb.GetItem", one_read)
    dynamodb.meta.events.register("provide-client-params.dynamodb.BatchGetItem", batch_read)
    group = waiter.acquire_many(names, timeout=PATIENCE)
    releaser.join()
    waiting_reads = batches[:-1] if batches and batches[-1] == set(names) else batches
    assert read or waiting_reads
    assert set(read) <= {names[0], names[2]}
    assert all(batch <= {names[0], names[2]} for batch in waiting_reads)
    assert [lease.key for lease in group] == names
    assert group.is_held()
    assert all(group.fencing_tokens[name] > held.fencing_tokens[name] for name in (names[0], names[2]))
    group.release()


def test_a_dead_holder_of_one_key_is_taken_over_after_exactly_one_lease_of_the_waiters_clock(make_client, endpoint_url):
    names = keys(3)
    dead = abandon(make_client(), names[2])
    clock = VirtualClock()
    # A patient read time-out: a loaded moto server took longer than the suite's 0.5 s to answer a try. The
    # leases run on the virtual clock, so the warning that a call may outlast one says nothing here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RetryBudgetWarning)
        waiter = make_client(make_dynamodb(endpoint_url, read_timeout=10), clock=clock)
    assert waiter.try_acquire_many(names) is None  # first sight of its version
    clock.advance(LEASE - TICK)
    assert waiter.try_acquire_many(names) is None
    clock.advance(TICK)
    group = waiter.try_acquire_many(names)
    assert group is not None
    assert group[names[2]].fencing_token > dead.fencing_token
    group.release()


@pytest.mark.requires("transactions")
def test_a_transaction_whose_answer_was_lost_is_resolved_by_the_next(make_client, dynamodb):
    names = keys(3)
    # A lease no heartbeat renews within the test: a renewal landed but not yet answered when the items are read
    # shows a version the lease does not know yet (seen on a loaded machine, with the suite's 1 s lease).
    client = make_client(dynamodb, lease_duration=60.0, heartbeat_period=15.0)
    FaultInjector(dynamodb).lose_response("TransactWriteItems")
    counter = RequestCounter(dynamodb)
    group = client.acquire_many(names, timeout=PATIENCE)  # the lost one landed: the next one's condition accepts it
    assert counter.calls["TransactWriteItems"] == 2
    for lease in group:
        stored = client.get(lease.key)
        assert (stored.record_version_number, stored.fencing_token) == (
            lease.record_version_number,
            lease.fencing_token,
        )
    group.release()


@pytest.mark.requires("transactions")
def test_a_retried_transaction_is_idempotent(make_client, endpoint_url):
    names = keys(3)
    # The answer is lost by a closed connection, not a time-out: a patient read time-out only keeps a slow
    # store's ordinary answers from counting as lost ones too.
    dynamodb = make_dynamodb(endpoint_url, retries={"mode": "standard", "total_max_attempts": 2}, read_timeout=3)
    client = make_client(dynamodb, lease_duration=10, heartbeat_period=1)  # a lease that outlasts the retries
    first = client.acquire_many(names)
    tokens = first.fencing_tokens
    first.release()
    request_tokens = []
    dynamodb.meta.events.register(
        "before-send.dynamodb.TransactWriteItems",
        lambda request, **_: request_tokens.append(json.loads(request.body)["ClientRequestToken"]),
    )
    FaultInjector(dynamodb).lose_response("TransactWriteItems", timed_out=False)
    group = client.acquire_many(names, timeout=PATIENCE)
    assert len(request_tokens) == 2  # sent, answer lost, and retried by botocore with the same token
    assert request_tokens[0] == request_tokens[1]
    assert group.fencing_tokens == {name: token + 1 for name, token in tokens.items()}  # applied once
    group.release()


@pytest.mark.requires("transactions")
def test_a_try_whose_answer_was_lost_raises_and_leaves_nothing_held(make_client, dynamodb):
    names = keys(3)
    client = make_client(dynamodb)
    FaultInjector(dynamodb).lose_response("TransactWriteItems")
    with pytest.raises(DynamoDBUnavailable):
        client.try_acquire_many(names)
    # What may have landed is released behind the caller (a try waits for nothing more after a time-out).
    wait_for(lambda: held_by(client, names) == set(), PATIENCE)


def test_failing_looks_at_a_held_key_back_off_and_the_time_out_says_dynamodb_is_unavailable(
    make_client, dynamodb, virtual_clock
):
    names = keys(3)
    make_client(lease_duration=60, heartbeat_period=20).acquire(names[1])
    # The waiter's clock is virtual: its second of back-off is counted whatever a loaded machine's threads do.
    client = make_client(dynamodb, clock=virtual_clock)
    faults = FaultInjector(dynamodb)
    # A waiting group looks at a held key by its reads and by its writes to the key's line (join, refresh).
    faults.fail("GetItem", times=10_000)
    faults.fail("UpdateItem", times=10_000)
    with pytest.raises(DynamoDBUnavailable):
        client.acquire_many(names, timeout=1.0)
    # Backing off doubles the pause; a round that forgot its failed look would look every 20 ms (~50).
    assert 1 <= faults.injected["GetItem"] + faults.injected["UpdateItem"] <= 15
    faults.clear()
    assert held_by(client, names) == set()


@pytest.mark.requires("transactions")
def test_a_throttled_transaction_is_dynamodb_unavailable_so_waiters_back_off(make_client, dynamodb):
    names = keys(3)
    client = make_client(dynamodb)
    reasons = [
        {"Code": "None"},
        {"Code": "ThrottlingError", "Message": "Throughput exceeds the limit"},
        {"Code": "None"},
    ]
    FaultInjector(dynamodb).fail("TransactWriteItems", "TransactionCanceledException", CancellationReasons=reasons)
    with pytest.raises(DynamoDBUnavailable, match="throttled"):
        client.try_acquire_many(names)  # not a refusal by nobody, retried at once
    assert held_by(client, names) == set()


@pytest.mark.requires("transactions")
def test_a_time_out_among_conflicting_transactions_says_so(make_client, dynamodb):
    names = keys(3)
    client = make_client(dynamodb)
    conflicts = [{"Code": "TransactionConflict"}] * len(names)
    FaultInjector(dynamodb).fail(
        "TransactWriteItems", "TransactionCanceledException", 400, 10_000, CancellationReasons=conflicts
    )
    with pytest.raises(LockTimeout, match="none was held, but the writes kept conflicting"):
        client.acquire_many(names, timeout=0.3)
    assert held_by(client, names) == set()


def test_more_than_100_keys_go_in_sorted_chunks_and_earlier_chunks_are_released_before_waiting(
    make_client, endpoint_url, store
):
    names = keys(150)
    holder, _ = patient_client(make_client, endpoint_url)
    waiter, dynamodb = patient_client(make_client, endpoint_url)
    lease = holder.acquire(names[-1])  # in the last chunk
    counter = RequestCounter(dynamodb)
    assert waiter.try_acquire_many(names) is None
    if store.supports("transactions"):  # the first chunk taken, the second refused, the first released
        assert dict(counter.calls) == {"TransactWriteItems": 3, "BatchGetItem": 1}
    assert held_by(waiter, names[::10] + names[99:]) == set()
    lease.release()
    counter.reset()
    group = waiter.acquire_many(names, timeout=PATIENCE)
    if store.supports("transactions"):
        assert dict(counter.calls) == {"TransactWriteItems": 2, "BatchGetItem": 2}
    else:
        assert dict(counter.calls) == {"UpdateItem": 150}
    assert len(group) == 150
    assert group.is_held()
    group.release()


def test_bad_key_lists_are_refused_with_the_fix(make_client):
    client = make_client()
    with pytest.raises(InvalidLockRequest, match="only once.*'a'"):
        client.acquire_many(["a", "b", "a"])
    with pytest.raises(InvalidLockRequest, match="at least one key"):
        client.try_acquire_many([])
    with pytest.raises(InvalidLockRequest, match="not one string"):
        client.acquire_many("ab")


def test_lease_group_looks_up_iterates_renews_and_releases_at_the_end_of_a_block(make_client, virtual_clock):
    names = keys(3)
    client = make_client(clock=virtual_clock)
    with client.acquire_many(names, data=b"d") as group:
        assert isinstance(group, LeaseGroup)
        assert len(group) == 3
        assert group.keys == names
        assert names[0] in group
        assert "other" not in group
        with pytest.raises(KeyError, match="not one of this group's locks"):
            group["other"]
        versions = {lease.key: lease.record_version_number for lease in group}
        virtual_clock.advance(2 * HEARTBEAT)
        assert group.is_held()
        assert group.lost() == []
        assert all(group[name].record_version_number != versions[name] for name in names)  # renewed
        assert all(client.get(name).data == b"d" for name in names)
    assert not group.is_held()
    assert all(client.get(name).is_released for name in names)


def test_a_lost_member_is_reported_and_the_block_ends_with_lock_lost(make_client):
    names = keys(3)
    client, operator = make_client(), make_client()
    lost = []
    notified = threading.Event()
    on_lost = lambda lease: (lost.append(lease.key), notified.set())  # noqa: E731
    with pytest.raises(LockLost, match="released by operator"), client.acquire_many(names, on_lost=on_lost) as group:
        operator.force_release(operator.get(names[1]), released_by="operator")
        assert notified.wait(PATIENCE)
        assert not group.is_held()
        assert [lease.key for lease in group.lost()] == [names[1]]
    assert lost == [names[1]]
    assert held_by(client, names) == set()  # the others were released all the same


def test_threads_of_one_client_wait_for_each_other_without_requests(make_client, dynamodb):
    names = keys(2)
    # A long lease: nothing renews while the requests are counted, and a slow answer (a loaded machine) loses nothing.
    client = make_client(dynamodb, lease_duration=60, heartbeat_period=20)
    # Another thread holds it: this thread's own hold would be refused at once (WouldDeadlock), not waited for.
    taken: list[Lease] = []
    holder = threading.Thread(target=lambda: taken.append(client.acquire(names[1])))
    holder.start()
    holder.join()
    (lease,) = taken
    counter = RequestCounter(dynamodb)
    releaser = threading.Timer(0.3, lease.release)
    releaser.start()
    group = client.acquire_many(names, timeout=PATIENCE)
    releaser.join()
    assert counter.calls["GetItem"] == 0  # waited here, not by reading the table
    assert counter.calls["TransactWriteItems"] <= 1  # then one round (none: one by one without transactions)
    assert group.is_held()
    group.release()


def test_on_a_table_with_a_sort_key_members_are_named_by_key_and_sort_key(make_client, dynamodb):
    name = unique("sorted")
    make_client(table=name, sort_key_name="sk").create_table()
    client = make_client(dynamodb, table=name, sort_key_name="sk")
    with pytest.raises(InvalidLockRequest, match="pass sort_key"):
        client.acquire_many(["a", "b"])
    with client.acquire_many([("a", "2"), ("a", "1"), ("b", "1")]) as group:
        assert group.keys == [("a", "1"), ("a", "2"), ("b", "1")]
        assert group[("a", "2")].sort_key == "2"
        assert set(group.fencing_tokens) == set(group.keys)
        assert client.get("a", sort_key="1").owner_name == client.owner_name
