"""The uncontended acquire's condition, written without parentheses, takes exactly the items the protocol calls free.

``wire/conditions.py`` writes that condition as a disjunction of conjunctions, because dynalite's
expression parser backtracks over nested parentheses (it parsed the parenthesized form about
seven times slower). Its meaning must not change: on every store, for every shape an item can
take (someone else's writes included), the write succeeds exactly when the rule below says so.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest

from dynalock_django.dynamodb.wire import writes
from dynalock_django.dynamodb.wire.layout import TableLayout

pytestmark = pytest.mark.stores

ABSENT = object()  # the attribute is not in the item
RELEASED = [ABSENT, {"S": "1"}, {"S": "no"}]
LINES = [
    ABSENT,
    {"M": {}},
    {"M": {"w1": {"M": {"since": {"N": "1"}}}}},
    {"S": "not a map"},
    {"S": ""},
    {"N": "0"},
    {"L": []},
]
TOKENS = [ABSENT, {"N": "17"}, {"S": "seven"}, {"M": {}}]


def free_by_the_rule(item: dict[str, Any] | None) -> bool:
    """No item; or a released one whose line holds nobody (none, not a map, or an empty map), and whose
    fencing token is absent or a number (the grant adds one to it)."""
    if item is None:
        return True
    line, token = item.get("line"), item.get("fencingToken")
    line_free = line is None or "M" not in line or not line["M"]
    return item.get("isReleased") == {"S": "1"} and line_free and (token is None or "N" in token)


def shapes() -> list[dict[str, Any] | None]:
    found: list[dict[str, Any] | None] = [None]
    for released, line, token in itertools.product(RELEASED, LINES, TOKENS):
        attributes = {"isReleased": released, "line": line, "fencingToken": token}
        item = {"ownerName": {"S": "someone"}, "leaseDuration": {"S": "1000"}, "recordVersionNumber": {"S": "v1"}}
        found.append(item | {name: value for name, value in attributes.items() if value is not ABSENT})
    return found


def test_the_flat_condition_takes_exactly_the_free_items(dynamodb, table_name, key):
    layout = TableLayout(table_name, "key", None, None)
    stamp = writes.Stamp(owner_name="me", version="v2", lease_duration=10.0, started=0.0, wall_time=1.7e9)
    disagreements = []
    for index, item in enumerate(shapes()):
        item_key = f"{key}-{index}"
        if item is not None:
            dynamodb.put_item(TableName=table_name, Item={"key": {"S": item_key}, **item})
        request = writes.acquire(
            layout, (item_key, None), stamp, data=None, observed=None, may_take_over=False, pending=[]
        )
        assert "(" not in re.sub(r"\w+\([^()]*\)", "", request["ConditionExpression"])  # calls, no groups
        try:
            dynamodb.update_item(**request)
            taken = True
        except dynamodb.exceptions.ConditionalCheckFailedException:
            taken = False
        if taken != free_by_the_rule(item):
            disagreements.append((item, taken))
    assert disagreements == []
