"""get_many: many lock items in one BatchGetItem per 100 keys, unread keys asked for again."""

from __future__ import annotations

import pytest

from dynalock_django.dynamodb import DynamoDBUnavailable

from ..dynamodb_support import RequestCounter, unique

pytestmark = pytest.mark.stores


def test_the_items_of_the_keys_come_back_by_key_in_one_request(make_client, dynamodb):
    client = make_client(dynamodb)
    held, released, missing = unique(), unique(), unique()
    lease = client.acquire(held)
    client.acquire(released).release()
    counter = RequestCounter(dynamodb)

    found = client.get_many([held, released, missing, held])

    assert counter.calls == {"BatchGetItem": 1}
    assert set(found) == {held, released}
    assert found[held].fencing_token == lease.fencing_token
    assert not found[held].is_released
    assert found[released].is_released
    lease.release()


def test_no_keys_make_no_request(make_client, dynamodb):
    client = make_client(dynamodb)
    counter = RequestCounter(dynamodb)
    assert client.get_many([]) == {}
    assert counter.total == 0


def test_more_than_100_keys_take_one_request_per_100(make_client, dynamodb):
    client = make_client(dynamodb)
    keys = [unique() for _ in range(150)]
    client.acquire(keys[0]).release()
    client.acquire(keys[120]).release()
    counter = RequestCounter(dynamodb)
    assert set(client.get_many(keys)) == {keys[0], keys[120]}
    assert counter.calls == {"BatchGetItem": 2}


def leave_unprocessed(dynamodb, times):
    """Make DynamoDB's next ``times`` answers leave every key they read unprocessed, as when throttled."""
    left = [times]

    def unread(parsed, **_):
        if left[0] == 0:
            return
        left[0] -= 1
        for table, items in parsed.get("Responses", {}).items():
            keys = [{"key": item["key"]} for item in items]
            parsed.setdefault("UnprocessedKeys", {})[table] = {"Keys": keys, "ConsistentRead": True}
            parsed["Responses"][table] = []

    dynamodb.meta.events.register("after-call.dynamodb.BatchGetItem", unread)


def test_unprocessed_keys_are_asked_for_again(make_client, dynamodb):
    client = make_client(dynamodb)
    key = unique()
    client.acquire(key).release()
    leave_unprocessed(dynamodb, times=2)
    counter = RequestCounter(dynamodb)
    assert set(client.get_many([key, unique()])) == {key}
    assert counter.calls == {"BatchGetItem": 3}


def test_keys_left_unread_after_every_retry_raise(make_client, dynamodb):
    client = make_client(dynamodb)
    key = unique()
    client.acquire(key).release()
    leave_unprocessed(dynamodb, times=100)
    with pytest.raises(DynamoDBUnavailable, match="unread after retries"):
        client.get_many([key])
