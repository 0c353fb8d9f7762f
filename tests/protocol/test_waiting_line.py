"""A lock's queue of waiters: joined, refreshed and left with one write each; kept by every write of the holder."""

from __future__ import annotations

import pytest

from dynalock_django.dynamodb import InvalidLockRequest, LockInfo, LockNotAcquired
from dynalock_django.dynamodb.wire import writes
from dynalock_django.dynamodb.wire.conditions import Detached, KeptAlive
from dynalock_django.dynamodb.wire.item import OWNER_NAME
from dynalock_django.dynamodb.wire.layout import TableLayout
from dynalock_django.dynamodb.wire.waiters import MAX_WAITERS, WAITERS
from dynalock_django.dynamodb.wire.writes import Stamp

from ..dynamodb_support import RequestCounter

TAB = "django-user:7/tab:first"


def queued(info: LockInfo | None) -> list[tuple[str, str]]:
    assert info is not None
    return [(waiter.waiter_id, waiter.name) for waiter in info.waiters]


def test_joining_a_held_lock_is_one_write_that_returns_the_queue_first_asked_first(make_client, dynamodb, key):
    holder, counter = make_client(), RequestCounter(dynamodb)
    waiter = make_client(dynamodb)
    lease = holder.acquire(key, owner_name=TAB, keep_alive=False)
    assert queued(waiter.join_queue(key, "bob", name="Bob")) == [("bob", "Bob")]
    assert dict(counter.calls) == {"UpdateItem": 1}
    assert queued(waiter.join_queue(key, "carol", name="Carol")) == [("bob", "Bob"), ("carol", "Carol")]
    assert queued(holder.get(key)) == [("bob", "Bob"), ("carol", "Carol")]
    lease.release()


def test_the_holders_renewal_returns_the_queue_at_no_extra_request(make_client, dynamodb, key):
    holder, waiter = make_client(dynamodb), make_client()
    granted = holder.acquire(key, owner_name=TAB, keep_alive=False)
    assert granted.waiters == ()
    waiter.join_queue(key, "bob", name="Bob")
    handle = holder.lease(key, owner_name=TAB, fencing_token=granted.fencing_token)
    counter = RequestCounter(dynamodb)
    handle.extend()
    assert dict(counter.calls) == {"UpdateItem": 1}
    assert [(w.waiter_id, w.name) for w in handle.waiters] == [("bob", "Bob")]
    handle.release()


def test_the_queue_outlives_renewals_and_releases_and_a_taker_leaves_it_in_the_same_write(make_client, dynamodb, key):
    holder, bob = make_client(), make_client(dynamodb)
    lease = holder.acquire(key, owner_name=TAB, keep_alive=False)
    bob.join_queue(key, "bob", name="Bob")
    bob.join_queue(key, "carol", name="Carol")
    holder.lease(key, owner_name=TAB, fencing_token=lease.fencing_token).extend()
    lease.release()
    freed = bob.get(key)
    assert freed.is_released
    assert queued(freed) == [("bob", "Bob"), ("carol", "Carol")]
    counter = RequestCounter(dynamodb)
    taken = bob.take_over(freed, owner_name="bob-tab", keep_alive=False, dequeue=["bob"])
    assert dict(counter.calls) == {"UpdateItem": 1}
    assert queued(bob.get(key)) == [("carol", "Carol")]
    taken.release()


def test_joining_without_a_lock_item_writes_nothing_and_a_released_lock_keeps_its_line(make_client, key):
    holder, waiter = make_client(), make_client()
    assert waiter.join_queue(key, "bob", name="Bob") is None  # no item: nothing created
    assert waiter.get(key) is None
    holder.acquire(key).release()
    found = waiter.join_queue(key, "bob", name="Bob")
    assert found.is_released
    assert queued(found) == [("bob", "Bob")]


def test_refreshing_moves_seen_not_since_and_never_puts_a_waiter_back(make_client, key):
    holder, waiter = make_client(), make_client()
    lease = holder.acquire(key, owner_name=TAB, keep_alive=False)
    first = waiter.join_queue(key, "bob", name="Bob").waiters[0]
    again = waiter.refresh_waiter(key, "bob").waiters[0]
    assert again.since == first.since
    assert again.seen >= first.seen
    waiter.leave_queue(key, "bob")
    assert waiter.refresh_waiter(key, "bob").waiters == ()
    waiter.leave_queue(key, "bob")  # not queued: nothing happens
    lease.release()


def test_an_item_written_without_a_queue_gets_one_at_the_first_ask(make_client, dynamodb, table_name, key):
    # As the AWS Java client writes its locks: PutItem, no attribute of ours.
    dynamodb.put_item(
        TableName=table_name,
        Item={
            "key": {"S": key},
            OWNER_NAME: {"S": "java"},
            "leaseDuration": {"S": "20000"},
            "recordVersionNumber": {"S": "v1"},
        },
    )
    waiter = make_client()
    assert queued(waiter.join_queue(key, "bob", name="Bob")) == [("bob", "Bob")]
    assert queued(waiter.join_queue(key, "carol", name="Carol")) == [("bob", "Bob"), ("carol", "Carol")]


def test_the_queue_is_capped(make_client, dynamodb, table_name, key):
    holder, waiter = make_client(), make_client()
    lease = holder.acquire(key, keep_alive=False, owner_name=TAB)
    for number in range(MAX_WAITERS):
        waiter.join_queue(key, f"w{number}", name="W")
    refused = waiter.join_queue(key, "late", name="Late")
    assert "late" not in {w.waiter_id for w in refused.waiters}
    assert len(waiter.join_queue(key, "w0", name="W").waiters) == MAX_WAITERS  # one already in may ask again
    stored = dynamodb.get_item(TableName=table_name, Key={"key": {"S": key}}, ConsistentRead=True)["Item"]
    assert len(stored[WAITERS]["M"]) == MAX_WAITERS  # as stored, not only as read
    lease.release()


@pytest.mark.parametrize(
    "stored",
    [
        {"S": "not a map"},
        {"M": {"x": {"S": "not an entry"}}},
        {"M": {"x": {"M": {"name": {"N": "1"}, "since": {"N": "1"}, "seen": {"N": "1"}}}}},
        {"M": {"x": {"M": {"name": {"S": "<b>"}, "since": {"N": "-1"}, "seen": {"N": "1.5"}}}}},
        {"M": {"x" * 300: {"M": {"name": {"S": "long id"}, "since": {"N": "1"}, "seen": {"N": "1"}}}}},
    ],
)
def test_a_hostile_queue_reads_as_no_waiters_and_an_ask_still_joins(make_client, dynamodb, table_name, key, stored):
    client = make_client()
    lease = client.acquire(key, keep_alive=False, owner_name=TAB)
    dynamodb.update_item(
        TableName=table_name,
        Key={"key": {"S": key}},
        UpdateExpression="SET #w = :w",
        ExpressionAttributeNames={"#w": WAITERS},
        ExpressionAttributeValues={":w": stored},
    )
    info = client.get(key)
    assert info.waiters == ()
    assert not info.is_malformed
    # A queue of the wrong type was a ValidationException (a 503 for every "Ask to edit"): now the ask
    # starts the queue anew; within a map, the ask is added beside what it cannot read.
    assert [waiter.waiter_id for waiter in client.join_queue(key, "bob", name="Bob").waiters] == ["bob"]
    lease.release()


def test_waiter_ids_and_names_are_checked(make_client, key):
    client = make_client()
    with pytest.raises(InvalidLockRequest, match="waiter_id"):
        client.join_queue(key, "", name="Bob")
    with pytest.raises(InvalidLockRequest, match="waiter name"):
        client.join_queue(key, "bob", name="")
    with pytest.raises(InvalidLockRequest, match="waiter_id"):
        client.refresh_waiter(key, "x" * 201)


def test_only_a_detached_leases_renewal_carries_the_item_back():
    layout = TableLayout("locks", "key", None, None)
    stamp = Stamp("owner", "v2", 10.0, 0.0, 1.0)
    tab = writes.renew(layout, ("k", None), stamp, holding=Detached("owner", 7))
    heartbeat = writes.renew(layout, ("k", None), stamp, holding=KeptAlive("owner", ("v1",)))
    assert tab["ReturnValues"] == "ALL_NEW"  # the queue, at no extra request
    assert heartbeat["ReturnValues"] == "NONE"  # a large data would travel back every period


def test_a_take_over_of_an_unchanged_item_refuses_a_holder_that_renewed_since_the_read(make_client, key):
    holder, taker = make_client(), make_client()
    lease = holder.acquire(key, keep_alive=False)
    read = taker.get(key)
    lease.extend()  # renewed: same holding, new version
    with pytest.raises(LockNotAcquired, match="changed since it was read"):
        taker.take_over(read, unchanged=True)
    assert lease.is_held()
    assert holder.get(key).record_version_number == lease.record_version_number
    taken = taker.take_over(taker.get(key), unchanged=True)  # as read now: taken
    assert taken.fencing_token > lease.fencing_token
