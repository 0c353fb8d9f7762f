"""The test-time guard of DynamoDB's limits (tests/dynamodb_limits.py) fails what DynamoDB would refuse."""

from __future__ import annotations

import pytest

from dynalock_django.dynamodb import LockClient

from .conftest import LIMITS
from .dynamodb_limits import DynamoDBLimitBreached, LimitGuard, check_request, item_size
from .dynamodb_support import make_dynamodb

KEYS = {"locks": ("key", "sortKey")}


def update(key: str = "k", **params: object) -> dict[str, object]:
    return {"TableName": "locks", "Key": {"key": {"S": key}}, **params}


@pytest.mark.parametrize(
    ("operation", "params", "problem"),
    [
        ("UpdateItem", update("k" * 2049), "partition key value of 2049 bytes"),
        ("UpdateItem", update("é" * 1025), "partition key value of 2050 bytes"),
        ("GetItem", {"TableName": "locks", "Key": {"key": {"S": "k"}, "sortKey": {"S": "s" * 1025}}}, "sort key"),
        ("PutItem", {"TableName": "locks", "Item": {"key": {"S": "k"}, "d": {"B": b"x" * 400 * 1024}}}, "an item of"),
        (
            "UpdateItem",
            update(ConditionExpression="attribute_exists(#k) AND " * 200 + "true"),
            "ConditionExpression of",
        ),
        (
            "UpdateItem",
            update(
                ConditionExpression="#o IN (" + ", ".join(f":v{i}" for i in range(101)) + ")",
                ExpressionAttributeValues={f":v{i}": {"S": "x"} for i in range(101)},
            ),
            "IN with 101 operands",
        ),
        ("UpdateItem", update(ExpressionAttributeValues={":n": {"N": "1e126"}}), "outside DynamoDB's range"),
        ("UpdateItem", update(ExpressionAttributeValues={":n": {"N": "1" * 39}}), "39 significant digits"),
        ("UpdateItem", update(ExpressionAttributeNames={"#" + "n" * 255: "name"}), "placeholder"),
        ("UpdateItem", update(""), "empty partition key"),
        (
            "TransactWriteItems",
            {"TransactItems": [{"Update": update(f"k{i}", UpdateExpression="SET a = :a")} for i in range(101)]},
            "101 actions",
        ),
        ("TransactWriteItems", {"TransactItems": [{"Update": update()}, {"ConditionCheck": update()}]}, "same item"),
        (
            "TransactWriteItems",
            {
                "TransactItems": [
                    {"Put": {"TableName": "locks", "Item": {"key": {"S": f"k{i}"}, "d": {"B": b"x" * 399_000}}}}
                    for i in range(11)
                ]
            },
            "a transaction of",
        ),
        (
            "BatchGetItem",
            {"RequestItems": {"locks": {"Keys": [{"key": {"S": f"k{i}"}} for i in range(101)]}}},
            "101 keys",
        ),
        ("CreateTable", {"TableName": "no", "AttributeDefinitions": []}, "table name"),
    ],
)
def test_a_request_past_a_limit_is_named(operation, params, problem):
    problems = check_request(operation, params, KEYS)
    assert any(problem in found for found in problems), problems


def test_requests_at_the_limits_pass():
    at_limits = [
        (
            "UpdateItem",
            update(
                "k" * 2048,
                ExpressionAttributeValues={
                    ":n": {"N": "9" * 38},
                    ":s": {"N": "-1E-130"},
                    ":m": {"N": "-9.9999999999999999999999999999999999999E+125"},
                },
            ),
        ),
        ("GetItem", {"TableName": "locks", "Key": {"key": {"S": "k"}, "sortKey": {"S": "s" * 1024}}}),
        ("PutItem", {"TableName": "locks", "Item": {"key": {"S": "k"}, "d": {"B": b"x" * (400 * 1024 - 5)}}}),
        ("UpdateItem", update(ConditionExpression="#o IN (" + ", ".join(f":v{i}" for i in range(100)) + ")")),
        ("TransactWriteItems", {"TransactItems": [{"Update": update(f"k{i}")} for i in range(100)]}),
    ]
    for operation, params in at_limits:
        assert check_request(operation, params, KEYS) == [], operation
    assert item_size({"key": {"S": "k"}, "d": {"B": b"x" * (400 * 1024 - 5)}}) == 400 * 1024


def test_an_oversized_request_from_any_boto3_client_fails_before_it_is_sent_and_is_remembered():
    """The guard the whole suite runs under: a client made by the package, with no hook of its own."""
    client = LockClient(make_dynamodb("http://127.0.0.1:9"), "no-such-table")  # port 9: nothing is sent
    with pytest.raises(DynamoDBLimitBreached, match="GetItem past DynamoDB's limits: a partition key value of 3000"):
        client.dynamodb.get_item(TableName="no-such-table", Key={"key": {"S": "k" * 3000}})
    assert LIMITS.take() == ["GetItem past DynamoDB's limits: a partition key value of 3000 bytes ('key'), over 2048"]
    client.close()


def test_a_guard_learns_the_key_schema_from_create_table():
    guard = LimitGuard()
    params = {
        "TableName": "locks2",
        "KeySchema": [{"AttributeName": "s", "KeyType": "RANGE"}, {"AttributeName": "p", "KeyType": "HASH"}],
    }

    class Model:
        name = "CreateTable"

    guard.check(params, Model())
    assert guard.key_names == {"locks2": ("p", "s")}
