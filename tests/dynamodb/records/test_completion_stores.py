"""Completion records on every store: what a completion costs, and a holder that lost its lock keeps nothing.

DynamoDB, moto and DynamoDB Local complete in one TransactWriteItems; dynalite, which has no
transactions, in two UpdateItems (the record, then the release), after one refused transaction per client.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dynalock_django.dynamodb import LockClient, LockLost

from ...dynamodb_support import RequestCounter, unique
from ...stores import Store

pytestmark = pytest.mark.stores

DAY = 86400.0


def test_what_a_completion_and_a_read_of_its_record_cost(make_client: Callable[..., LockClient], store: Store) -> None:
    client = make_client()
    key, again = unique(), unique()
    lease = client.acquire(key)
    counted = RequestCounter(client.dynamodb)
    client.complete(lease, b"done", keep_for=DAY)
    if store.supports("transactions"):
        assert counted.calls == {"TransactWriteItems": 1}
    else:
        assert counted.calls == {"TransactWriteItems": 1, "UpdateItem": 2}  # asked once, then known
        counted.reset()
        client.complete(client.acquire(again), b"done", keep_for=DAY)
        assert counted.calls == {"UpdateItem": 3}  # the grant, the record, the release
    counted.reset()
    record = client.get_record(key)
    assert record is not None
    assert record.value == b"done"
    assert counted.calls == {"GetItem": 1}


def test_a_holder_whose_lock_was_taken_over_keeps_no_record(make_client: Callable[..., LockClient]) -> None:
    holder, operator = make_client(), make_client()
    key = unique()
    lease = holder.acquire(key)
    operator.take_over(operator.get(key))  # type: ignore[arg-type]
    with pytest.raises(LockLost):
        holder.complete(lease, b"late", keep_for=DAY)
    assert operator.get_record(key) is None
