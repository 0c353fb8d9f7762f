"""A failed transaction changes nothing, on the in-process store as on moto's server; and it copies only what it names.

The in-process store puts back the items a failed transaction named in place of moto's copies of
whole tables (``in_memory_rollback``). ``--store moto`` runs the first two tests on moto's server,
whose rollback is moto's own: what they assert is the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from moto.dynamodb.models.dynamo_type import Item

from dynalock_django.dynamodb import InMemoryDynamoDB

from ...dynamodb_support import unique

# The in-memory store's own rollback: a server has none of this process's to test.
pytestmark = pytest.mark.requires("in_process_backend")


def _create(dynamodb: Any, name: str, *, sort_key: bool) -> None:
    schema = [{"AttributeName": "pk", "KeyType": "HASH"}]
    attributes = [{"AttributeName": "pk", "AttributeType": "S"}]
    if sort_key:
        schema.append({"AttributeName": "sk", "KeyType": "RANGE"})
        attributes.append({"AttributeName": "sk", "AttributeType": "N"})
    dynamodb.create_table(
        TableName=name, KeySchema=schema, AttributeDefinitions=attributes, BillingMode="PAY_PER_REQUEST"
    )


@pytest.fixture
def tables(dynamodb: Any) -> Iterator[tuple[str, str]]:
    """A table keyed by ``pk`` and one keyed by ``pk`` and ``sk``, deleted after the test."""
    plain, sorted_ = unique("rollback-plain"), unique("rollback-sorted")
    _create(dynamodb, plain, sort_key=False)
    _create(dynamodb, sorted_, sort_key=True)
    yield plain, sorted_
    for name in (plain, sorted_):
        dynamodb.delete_table(TableName=name)


def _everything(dynamodb: Any, *names: str) -> dict[str, list[Any]]:
    return {
        name: sorted(
            (sorted(item.items()) for item in dynamodb.scan(TableName=name, ConsistentRead=True)["Items"]),
            key=repr,
        )
        for name in names
    }


def _transaction(plain: str, sorted_: str, *, fails: bool) -> list[dict[str, Any]]:
    """Changes an item in place, puts a new one, deletes one, in both tables; then checks ``b``."""
    update = "SET v = :v, nested.deep = :v ADD n :one"
    values = {":v": {"S": "changed"}, ":one": {"N": "1"}}
    return [
        {"Update": {"TableName": plain, "Key": {"pk": {"S": "a"}}, "UpdateExpression": update,
                    "ExpressionAttributeValues": values}},
        {"Put": {"TableName": plain, "Item": {"pk": {"S": "new"}, "v": {"S": "put"}}}},
        {"Delete": {"TableName": plain, "Key": {"pk": {"S": "d"}}}},
        {"Update": {"TableName": sorted_, "Key": {"pk": {"S": "p"}, "sk": {"N": "1"}}, "UpdateExpression": update,
                    "ExpressionAttributeValues": values}},
        {"Put": {"TableName": sorted_, "Item": {"pk": {"S": "p"}, "sk": {"N": "2"}, "v": {"S": "put"}}}},
        {"Put": {"TableName": sorted_, "Item": {"pk": {"S": "q"}, "sk": {"N": "1"}, "v": {"S": "put"}}}},
        {"ConditionCheck": {"TableName": plain, "Key": {"pk": {"S": "b"}},
                            "ConditionExpression": "attribute_not_exists(pk)" if fails else "attribute_exists(pk)"}},
    ]  # fmt: skip


def _seed(dynamodb: Any, plain: str, sorted_: str) -> None:
    for pk in ("a", "b", "d", "untouched"):
        dynamodb.put_item(
            TableName=plain, Item={"pk": {"S": pk}, "v": {"S": "before"}, "nested": {"M": {"deep": {"S": "x"}}}}
        )
    for sk in ("1", "3"):  # 3: beside the transaction's keys, under the same partition key
        dynamodb.put_item(
            TableName=sorted_,
            Item={"pk": {"S": "p"}, "sk": {"N": sk}, "v": {"S": "before"}, "nested": {"M": {"deep": {"S": "x"}}}},
        )


def test_a_failed_transaction_leaves_every_table_as_it_was(dynamodb: Any, tables: tuple[str, str]) -> None:
    plain, sorted_ = tables
    _seed(dynamodb, plain, sorted_)
    before = _everything(dynamodb, plain, sorted_)
    with pytest.raises(dynamodb.exceptions.TransactionCanceledException):
        dynamodb.transact_write_items(TransactItems=_transaction(plain, sorted_, fails=True))
    assert _everything(dynamodb, plain, sorted_) == before
    # And what was put back is the table's own again: a later write to it lands.
    dynamodb.update_item(
        TableName=plain,
        Key={"pk": {"S": "a"}},
        UpdateExpression="SET v = :v",
        ExpressionAttributeValues={":v": {"S": "later"}},
    )
    assert dynamodb.get_item(TableName=plain, Key={"pk": {"S": "a"}}, ConsistentRead=True)["Item"]["v"] == {
        "S": "later"
    }


def test_a_transaction_that_succeeds_keeps_all_it_wrote(dynamodb: Any, tables: tuple[str, str]) -> None:
    plain, sorted_ = tables
    _seed(dynamodb, plain, sorted_)
    dynamodb.transact_write_items(TransactItems=_transaction(plain, sorted_, fails=False))
    after = _everything(dynamodb, plain, sorted_)
    assert {dict(item)["pk"]["S"]: dict(item)["v"]["S"] for item in after[plain]} == {
        "a": "changed",
        "b": "before",
        "new": "put",
        "untouched": "before",
    }
    assert {(dict(item)["pk"]["S"], dict(item)["sk"]["N"]): dict(item)["v"]["S"] for item in after[sorted_]} == {
        ("p", "1"): "changed",
        ("p", "2"): "put",
        ("p", "3"): "before",
        ("q", "1"): "put",
    }


def test_a_transaction_on_the_in_process_store_copies_the_items_it_names_not_whole_tables() -> None:
    """moto's own rollback copies each named table whole, once per operation: here 7 x 200 items and more."""
    dynamodb = InMemoryDynamoDB().client()
    plain, sorted_ = unique("rollback-plain"), unique("rollback-sorted")
    _create(dynamodb, plain, sort_key=False)
    _create(dynamodb, sorted_, sort_key=True)
    try:
        _seed(dynamodb, plain, sorted_)
        for index in range(200):
            dynamodb.put_item(TableName=plain, Item={"pk": {"S": f"filler-{index}"}})
        copies = mock.patch.object(Item, "__deepcopy__", autospec=True, side_effect=Item.__deepcopy__)
        for fails in (True, False):
            with copies as copied:
                try:
                    dynamodb.transact_write_items(TransactItems=_transaction(plain, sorted_, fails=fails))
                except dynamodb.exceptions.TransactionCanceledException:
                    assert fails
            assert copied.call_count < 20, copied.call_count  # a few items each, not tables
    finally:
        for name in (plain, sorted_):
            dynamodb.delete_table(TableName=name)
