"""A lock's queue of waiters: joined, refreshed and left with one write each; kept by every write of the holder."""

from __future__ import annotations

import time
from typing import Any

import pytest

from dynalock_django.dynamodb import InvalidLockRequest, LockInfo, LockNotAcquired
from dynalock_django.dynamodb.aws.store import Refused
from dynalock_django.dynamodb.wire import queue_pruning, waiters, writes
from dynalock_django.dynamodb.wire.conditions import Detached, KeptAlive
from dynalock_django.dynamodb.wire.item import OWNER_NAME
from dynalock_django.dynamodb.wire.layout import TableLayout
from dynalock_django.dynamodb.wire.waiters import LIVE_SECONDS, MAX_WAITERS, NAME, SEEN, SINCE, WAITERS
from dynalock_django.dynamodb.wire.writes import Stamp

from ..dynamodb_support import RequestCounter, make_dynamodb

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


@pytest.mark.requires("transactions")
def test_acquire_many_grants_each_lease_with_the_queue_its_write_found(make_client, key, virtual_clock):
    """As a single grant does: whoever takes a set of free locks learns who waits for each (its BatchGetItem)."""
    # On the virtual clock: in real time, a loaded machine that answers the transaction after the suite's 1 s
    # lease gets no lease (rightly: it would have no time left), and the test is not about time.
    holder, other = make_client(clock=virtual_clock), make_client(clock=virtual_clock)
    keys = [key, f"{key}-other"]
    lease = holder.acquire(key, owner_name=TAB, keep_alive=False)
    holder.join_queue(key, "bob", name="Bob")
    lease.release()
    group = other.acquire_many(keys, timeout=0)
    try:
        assert [(w.waiter_id, w.name) for w in group[key].waiters] == [("bob", "Bob")]
        assert group[keys[1]].waiters == ()
    finally:
        group.release()


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


# The queue heals itself: entries that hold no live waiter are taken out by the writes that read them.

LIVE_MS = int(LIVE_SECONDS * 1000)


def entry_seen(seconds_ago: float, name: str = "Gone") -> dict[str, Any]:
    then = {"N": str(int((time.time() - seconds_ago) * 1000))}
    return {"M": {NAME: {"S": name}, SINCE: then, SEEN: then}}


def store_queue(dynamodb: Any, table_name: str, key: str, entries: dict[str, Any]) -> None:
    dynamodb.update_item(
        TableName=table_name,
        Key={"key": {"S": key}},
        UpdateExpression="SET #w = :w",
        ExpressionAttributeNames={"#w": WAITERS},
        ExpressionAttributeValues={":w": {"M": entries}},
    )


def stored_ids(dynamodb: Any, table_name: str, key: str) -> set[str]:
    stored = dynamodb.get_item(TableName=table_name, Key={"key": {"S": key}}, ConsistentRead=True)["Item"]
    return set(stored[WAITERS]["M"])


MALFORMED = [
    {"S": "not an entry"},
    {"M": {SINCE: {"N": "1"}, SEEN: {"N": "1"}}},  # no name
    {"M": {NAME: {"N": "1"}, SINCE: {"N": "1"}, SEEN: {"N": "1"}}},
    {"M": {NAME: {"S": "x"}, SINCE: {"S": "1"}, SEEN: {"N": "1"}}},
    {"M": {NAME: {"S": "x"}, SINCE: {"N": "1"}}},  # never seen
    {"M": {NAME: {"S": "x"}, SINCE: {"N": "-1"}, SEEN: {"N": "1"}}},
    {"M": {NAME: {"S": "x"}, SINCE: {"N": "1"}, SEEN: {"N": "1.5"}}},
]


def test_stale_entries_make_room_in_a_full_queue_in_one_more_write(make_client, dynamodb, table_name, key, store):
    holder, waiter = make_client(), make_client(dynamodb)
    lease = holder.acquire(key, keep_alive=False, owner_name=TAB)
    # Twenty people asked and closed their tabs without the leave beacon (and a few entries were
    # written by someone else): none of them is anyone's place in line.
    dead = {f"gone{number}": entry_seen(LIVE_SECONDS + 60) for number in range(MAX_WAITERS - len(MALFORMED) - 1)}
    malformed = {f"bad{number}": stored for number, stored in enumerate(MALFORMED)}
    store_queue(dynamodb, table_name, key, {**dead, **malformed, "x" * 300: entry_seen(0)})
    counter = RequestCounter(dynamodb)

    joined = waiter.join_queue(key, "bob", name="Bob")

    refused = store.refused_update_costs
    assert dict(counter.calls) == {**refused, "UpdateItem": refused["UpdateItem"] + 1}
    assert queued(joined) == [("bob", "Bob")]
    assert stored_ids(dynamodb, table_name, key) == {"bob"}  # every stale entry taken out in the same write
    lease.release()


def test_the_cap_counts_live_entries_and_a_queue_of_live_ones_stays_full(make_client, dynamodb, table_name, key):
    holder, waiter = make_client(), make_client()
    lease = holder.acquire(key, keep_alive=False, owner_name=TAB)
    live = {f"w{number}": entry_seen(LIVE_SECONDS - 30, "W") for number in range(MAX_WAITERS - 1)}
    store_queue(dynamodb, table_name, key, {**live, "gone": entry_seen(LIVE_SECONDS + 5)})
    assert "bob" in {w.waiter_id for w in waiter.join_queue(key, "bob", name="Bob").waiters}
    assert stored_ids(dynamodb, table_name, key) == {*live, "bob"}
    refused = waiter.join_queue(key, "carol", name="Carol")  # twenty live waiters: full
    assert "carol" not in {w.waiter_id for w in refused.waiters}
    assert stored_ids(dynamodb, table_name, key) == {*live, "bob"}
    lease.release()


@pytest.mark.parametrize("stale", [entry_seen(LIVE_SECONDS + 60), *MALFORMED], ids=["dead", *map(str, range(7))])
def test_an_entry_stale_when_read_is_kept_if_its_waiter_asked_again_before_the_write(
    make_client, dynamodb, table_name, key, stale
):
    client = make_client()
    lease = client.acquire(key, keep_alive=False, owner_name=TAB)
    store_queue(dynamodb, table_name, key, {"bob": stale})
    found = waiters.stale_entries(client.get(key).raw_waiters, time.time())
    assert [entry.waiter_id for entry in found] == ["bob"]
    client.join_queue(key, "bob", name="Bob")  # bob asked again between the read and the write

    with pytest.raises(Refused):
        client.store.update(queue_pruning.prune(client.layout, (key, None), found))

    assert queued(client.get(key)) == [("bob", "Bob")]
    lease.release()


def test_a_detached_leases_renewal_takes_stale_entries_out_once(make_client, dynamodb, table_name, key):
    holder = make_client(dynamodb)
    granted = holder.acquire(key, owner_name=TAB, keep_alive=False)
    stale = {"gone": entry_seen(LIVE_SECONDS + 1), "bad": MALFORMED[2], "ahead": entry_seen(-LIVE_SECONDS - 60)}
    store_queue(dynamodb, table_name, key, {**stale, "bob": entry_seen(LIVE_SECONDS - 30, "Bob")})
    handle = holder.lease(key, owner_name=TAB, fencing_token=granted.fencing_token)
    counter = RequestCounter(dynamodb)

    handle.extend()

    assert dict(counter.calls) == {"UpdateItem": 2}  # the renewal, and one write taking out what it found stale
    counter.reset()
    handle.extend()
    assert dict(counter.calls) == {"UpdateItem": 1}  # nothing stale left: the renewal alone
    assert stored_ids(dynamodb, table_name, key) == {"bob"}
    assert handle.is_held()
    handle.release()


def test_a_waiter_silent_past_the_live_window_is_not_put_back_by_its_refresh(make_client, dynamodb, table_name, key):
    client = make_client()
    lease = client.acquire(key, keep_alive=False, owner_name=TAB)
    store_queue(dynamodb, table_name, key, {"bob": entry_seen(LIVE_SECONDS + 5), "carol": entry_seen(LIVE_SECONDS - 5)})
    after = client.refresh_waiter(key, "bob")  # its tab was frozen: it left the line when the window ended
    assert [w.waiter_id for w in after.waiters if w.is_live(time.time())] == ["carol"]
    assert [w.waiter_id for w in client.refresh_waiter(key, "carol").waiters if w.is_live(time.time())] == ["carol"]
    store_queue(dynamodb, table_name, key, {"bob": MALFORMED[0]})
    assert client.refresh_waiter(key, "bob").waiters == ()  # an entry of the wrong shape: refused, not a 503
    lease.release()


def test_a_hostile_queue_of_hundreds_of_entries_is_taken_out_a_bite_at_a_time(
    make_client, dynamodb, endpoint_url, table_name, key
):
    # Items of 60 KB are slow to answer on a busy machine: a longer read time-out, and a lease that allows it.
    client = make_client(make_dynamodb(endpoint_url, read_timeout=10), lease_duration=60.0, heartbeat_period=10.0)
    lease = client.acquire(key, keep_alive=False, owner_name=TAB)
    # Each pruning write stays inside DynamoDB's limits (checked on every request of the suite).
    store_queue(dynamodb, table_name, key, {f"{number:0200d}": MALFORMED[0] for number in range(300)})
    assert [w.waiter_id for w in client.join_queue(key, "bob", name="Bob").waiters] == ["bob"]  # no live entry
    assert len(stored_ids(dynamodb, table_name, key)) == 300 - queue_pruning.MAX_PRUNED_PER_WRITE + 1
    handle = client.lease(key, owner_name=TAB, fencing_token=lease.fencing_token)
    handle.extend()
    assert len(stored_ids(dynamodb, table_name, key)) == 300 - 2 * queue_pruning.MAX_PRUNED_PER_WRITE + 1
    lease.release()
