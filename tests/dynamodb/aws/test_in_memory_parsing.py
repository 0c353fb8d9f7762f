"""The in-process store parses each update expression once (``in_memory_parsing``); moto never changes a kept tree."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from moto.dynamodb.parsing.expressions import UpdateExpressionParser

from dynalock_django.dynamodb import InMemoryDynamoDB, LockClient, VirtualClock

from ...dynamodb_support import LEASE, short_lease_client, unique

TABLE = unique("parsing")

pytestmark = pytest.mark.unit


def test_an_expression_is_parsed_once_and_one_moto_refuses_is_refused_each_time() -> None:
    InMemoryDynamoDB()  # installs the cache
    expression = "SET #a = :a, #b = if_not_exists(#b, :b) REMOVE #c"
    assert UpdateExpressionParser.make(expression) is UpdateExpressionParser.make(expression)
    for _ in range(2):
        with pytest.raises(Exception, match="Invalid UpdateExpression"):
            UpdateExpressionParser.make("SET #a = = :a")


def workload(first: LockClient, second: LockClient, clock: VirtualClock) -> None:
    """Every kind of update a lock client sends: a new item, an update, a refusal, a takeover, a renewal, a
    release, a group's transaction and its refusal, a semaphore's permit."""
    key, group = unique(), [unique(), unique()]
    lease = first.acquire(key, keep_alive=False)
    assert second.try_acquire(key) is None  # refused: it sees the version
    clock.advance(LEASE * 1.5)
    taken = second.try_acquire(key, keep_alive=False)  # the version unchanged for a lease: taken over
    assert taken is not None
    taken.extend()  # a renewal
    taken.release()
    assert not lease.is_held()
    held = first.acquire_many(group)
    assert second.try_acquire_many(group) is None
    held.release()
    permit = first.semaphore(unique(), 2).acquire()
    permit.release()


def test_no_request_changes_a_kept_tree() -> None:
    clock = VirtualClock()
    store = InMemoryDynamoDB(clock=clock, connect_timeout=0.25, read_timeout=0.5, retries={"total_max_attempts": 1})
    sent: list[str] = []

    def note(params: dict[str, Any], **_: Any) -> None:
        for part in params.get("TransactItems", [params]):
            update = part.get("Update", part)
            if "UpdateExpression" in update:
                sent.append(update["UpdateExpression"])

    clients = []
    for _ in range(2):
        dynamodb = store.client()
        dynamodb.meta.events.register("provide-client-params.dynamodb", note)
        clients.append(short_lease_client(dynamodb, TABLE, clock=clock))
    clients[0].create_table()
    try:
        workload(*clients, clock)  # the trees are parsed and kept
        trees = {expression: UpdateExpressionParser.make(expression) for expression in set(sent)}
        assert len(trees) >= 3  # an acquire's, a renewal's, a release's at least
        before = {expression: pickle.dumps(tree) for expression, tree in trees.items()}

        workload(*clients, clock)  # each of them used again

        for expression, tree in trees.items():
            assert UpdateExpressionParser.make(expression) is tree
            assert pickle.dumps(tree) == before[expression], expression
    finally:
        for client in clients:
            client.close(release=False)
        clients[0].dynamodb.delete_table(TableName=TABLE)
