"""moto's rollback of a failed transaction, for the in-memory store: the items it names, not whole tables.

moto keeps, for each operation of a TransactWriteItems, a deep copy of the operation's whole table,
to put back if one of them fails: a 100-key transaction on a table of 2,000 items copies 200,000
items, seconds of CPU, and the suite's tables grow with the run. A transaction can change only the
items at the keys it names (on a table with a sort key: under the partition keys it names), so
:func:`rollback_by_named_items` copies those before moto runs and puts them back when moto answers
that the transaction failed; moto's own copy of a table, meanwhile, is the table itself.

What a failed transaction leaves is what moto's own rollback leaves (items changed in place, put,
deleted, under a sort key or not: tests/dynamodb/aws/test_in_memory_rollback.py, on this store and
on moto's server alike). A transaction this rule does not cover (a body it cannot read, a table with
a stream, whose records a rollback would have to take back too) runs as moto runs it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

TRANSACT_WRITE_ITEMS = "DynamoDB_20120810.TransactWriteItems"
# The key of an operation: a Put names it in its item, the others in Key.
_KEY_OF = {"Put": "Item", "Update": "Key", "Delete": "Key", "ConditionCheck": "Key"}
_ABSENT = object()

# What the caller says moto answered: its HTTP status.
Settle = Callable[[int], None]


@contextmanager
def rollback_by_named_items(request: Any, backend: Callable[[], Any]) -> Iterator[Settle]:
    """While moto answers ``request``: for a TransactWriteItems, yields what puts back the items it named
    if moto's answer (its status) says it failed. ``backend`` returns moto's DynamoDB backend that answers
    it (called for a transaction only).

    Call only under the lock that keeps every other request from ``backend`` meanwhile.
    """
    saved = _named_items(request, backend)
    if saved is None:
        yield _nothing_to_settle
        return
    for table in saved:
        # copy.deepcopy looks __deepcopy__ up on the instance: moto's copy of this table is the table.
        vars(table)["__deepcopy__"] = _itself(table)

    def settle(status: int) -> None:
        if status >= 300:  # moto put its copies back: these are what they held at the keys it could change
            for table, items in saved.items():
                for partition, item in items.items():
                    if item is _ABSENT:
                        table.items.pop(partition, None)
                    else:
                        table.items[partition] = item

    try:
        yield settle
    finally:
        for table in saved:
            vars(table).pop("__deepcopy__", None)


def _named_items(request: Any, backend: Callable[[], Any]) -> dict[Any, dict[Any, Any]] | None:
    """Each table's copies of what the transaction's keys hold now, by partition key; None: moto's own rollback."""
    target = request.headers.get("X-Amz-Target")
    if isinstance(target, bytes):
        target = target.decode()
    if target != TRANSACT_WRITE_ITEMS:
        return None
    from moto.dynamodb.models.dynamo_type import DynamoType

    try:
        operations = json.loads(request.body)["TransactItems"]
        tables = backend().tables
        saved: dict[Any, dict[Any, Any]] = {}
        for operation in operations:
            for kind, arguments in operation.items():
                table = tables.get(arguments.get("TableName"))
                key = arguments.get(_KEY_OF.get(kind, "Key"))
                if table is None or not isinstance(key, dict) or table.hash_key_attr not in key:
                    continue  # moto refuses it without changing anything
                if table.stream_shard is not None:
                    return None
                partition = DynamoType(key[table.hash_key_attr])
                items = saved.setdefault(table, {})
                if partition not in items:
                    items[partition] = copy.deepcopy(table.items[partition]) if partition in table.items else _ABSENT
    except Exception:  # a request moto will refuse: let it, on its own path
        return None
    return saved or None


def _itself(table: Any) -> Callable[[dict[int, Any]], Any]:
    return lambda memo: table


def _nothing_to_settle(status: int) -> None:
    """A request that is no transaction, or one moto rolls back its own way."""
