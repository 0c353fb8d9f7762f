"""DynamoDB's documented limits, checked on every request a botocore client of the suite sends.

The local stores accept requests DynamoDB itself would refuse (moto and dynalite check few of
its limits), so a request past one of them would pass every test here and fail in production.
:func:`install` makes every botocore session created afterwards check each DynamoDB request
before it is built (``before-parameter-build.dynamodb``): a breach raises
:class:`DynamoDBLimitBreached` where the request was made and is remembered, so the test that
caused it fails even when the request was sent from a thread that swallowed the error.

The limits are the DynamoDB Developer Guide's ("Service, account, and table quotas",
"Expressions", "Item sizes") and the API reference's.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

import botocore.session

PARTITION_KEY_BYTES = 2048
SORT_KEY_BYTES = 1024
ITEM_BYTES = 400 * 1024
EXPRESSION_BYTES = 4 * 1024
SUBSTITUTIONS_BYTES = 2 * 1024 * 1024  # all ExpressionAttributeNames and Values of one request
PLACEHOLDER_BYTES = 255
IN_OPERANDS = 100
EXPRESSION_OPERATORS = 300
TRANSACTION_ACTIONS = 100
TRANSACTION_BYTES = 4 * 1024 * 1024
BATCH_GET_KEYS = 100
BATCH_WRITE_REQUESTS = 25
KEY_ATTRIBUTE_NAME_BYTES = 255
ATTRIBUTE_NAME_BYTES = 64 * 1024
NESTING_DEPTH = 32
NUMBER_DIGITS = 38
NUMBER_MAX = Decimal("9.9999999999999999999999999999999999999E+125")
NUMBER_MIN_POSITIVE = Decimal("1E-130")
TABLE_NAME = re.compile(r"[a-zA-Z0-9_.-]{3,255}")

_EXPRESSIONS = (
    "ConditionExpression",
    "UpdateExpression",
    "ProjectionExpression",
    "FilterExpression",
    "KeyConditionExpression",
)
_OPERATORS = re.compile(r"\b(?:AND|OR|NOT|BETWEEN|IN)\b|<>|<=|>=|=|<|>", re.IGNORECASE)


class DynamoDBLimitBreached(AssertionError):
    """A request DynamoDB itself would refuse (a ValidationException there)."""


def check_request(operation: str, params: dict[str, Any], key_names: dict[str, tuple[str, ...]]) -> list[str]:
    """Every limit ``params`` of ``operation`` breaks, in words; ``key_names`` maps table names to their
    key attributes (partition first) where known."""
    problems: list[str] = []
    table = params.get("TableName")
    if isinstance(table, str) and not TABLE_NAME.fullmatch(table):
        problems.append(f"table name {table!r} is not 3 to 255 of [a-zA-Z0-9_.-]")
    if operation in ("TransactWriteItems", "TransactGetItems"):
        problems += _check_transaction(params.get("TransactItems", []), key_names)
    elif operation == "BatchGetItem":
        keys = [key for request in params.get("RequestItems", {}).values() for key in request.get("Keys", [])]
        if len(keys) > BATCH_GET_KEYS:
            problems.append(f"BatchGetItem asks for {len(keys)} keys, over {BATCH_GET_KEYS}")
        for name, request in params.get("RequestItems", {}).items():
            problems += _check_action({"TableName": name, **request}, key_names, keys=request.get("Keys", []))
    elif operation == "BatchWriteItem":
        requests = [r for writes in params.get("RequestItems", {}).values() for r in writes]
        if len(requests) > BATCH_WRITE_REQUESTS:
            problems.append(f"BatchWriteItem has {len(requests)} requests, over {BATCH_WRITE_REQUESTS}")
    else:
        problems += _check_action(params, key_names)
    if operation == "CreateTable":
        for element in params.get("AttributeDefinitions", []):
            if _utf8(element["AttributeName"]) > KEY_ATTRIBUTE_NAME_BYTES:
                problems.append(f"key attribute name of {_utf8(element['AttributeName'])} bytes, over 255")
    return problems


def _check_transaction(actions: list[dict[str, Any]], key_names: dict[str, tuple[str, ...]]) -> list[str]:
    problems = []
    if len(actions) > TRANSACTION_ACTIONS:
        problems.append(f"a transaction of {len(actions)} actions, over {TRANSACTION_ACTIONS}")
    total = 0
    targets = []
    for action in actions:
        for body in action.values():
            problems += _check_action(body, key_names)
            total += sum(item_size(body.get(part) or {}) for part in ("Item", "Key", "ExpressionAttributeValues"))
            targets.append((body.get("TableName"), _frozen(body.get("Key") or _key_of(body, key_names))))
    if total > TRANSACTION_BYTES:
        problems.append(f"a transaction of {total} bytes, over {TRANSACTION_BYTES}")
    if len(set(targets)) < len(targets):
        problems.append("a transaction with two actions on the same item")
    return problems


def _check_action(
    params: dict[str, Any], key_names: dict[str, tuple[str, ...]], keys: list[dict[str, Any]] | None = None
) -> list[str]:
    problems: list[str] = []
    names = key_names.get(params.get("TableName", ""), ())
    for key in [*(keys or []), *([params["Key"]] if "Key" in params else []), _key_of(params, key_names)]:
        problems += _check_key(key, names)
    if "Item" in params:
        size = item_size(params["Item"])
        if size > ITEM_BYTES:
            problems.append(f"an item of {size} bytes, over {ITEM_BYTES}")
        for name, value in params["Item"].items():
            problems += _check_value(name, value, depth=1)
    substitutions = 0
    for name, placeholder_name in params.get("ExpressionAttributeNames", {}).items():
        substitutions += _utf8(name) + _utf8(placeholder_name)
        if _utf8(name) > PLACEHOLDER_BYTES:
            problems.append(f"placeholder {name[:40]!r}... of {_utf8(name)} bytes, over {PLACEHOLDER_BYTES}")
        if not placeholder_name or _utf8(placeholder_name) > ATTRIBUTE_NAME_BYTES:
            problems.append(f"attribute name of {_utf8(placeholder_name)} bytes (1 to {ATTRIBUTE_NAME_BYTES})")
    for name, value in params.get("ExpressionAttributeValues", {}).items():
        substitutions += _utf8(name) + _value_size(value)
        if _utf8(name) > PLACEHOLDER_BYTES:
            problems.append(f"placeholder {name[:40]!r}... of {_utf8(name)} bytes, over {PLACEHOLDER_BYTES}")
        problems += _check_value(name, value, depth=1)
    if substitutions > SUBSTITUTIONS_BYTES:
        problems.append(f"substitutions of {substitutions} bytes, over {SUBSTITUTIONS_BYTES}")
    for field in _EXPRESSIONS:
        expression = params.get(field)
        if isinstance(expression, str):
            problems += _check_expression(field, expression)
    return problems


def _key_of(params: dict[str, Any], key_names: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    """The key attributes of a PutItem's item, where the table's key schema is known."""
    item = params.get("Item") or {}
    return {name: item[name] for name in key_names.get(params.get("TableName", ""), ()) if name in item}


def _check_key(key: dict[str, Any], names: tuple[str, ...]) -> list[str]:
    problems = []
    for name, value in key.items():
        # Partition first in a known schema; unknown: the larger, the partition key's limit.
        is_sort = bool(names) and name != names[0]
        limit = SORT_KEY_BYTES if is_sort else PARTITION_KEY_BYTES
        kind = "sort" if is_sort else "partition"
        size = _scalar_bytes(value)
        if size == 0 and ("S" in value or "B" in value):
            problems.append(f"an empty {kind} key value ({name!r})")
        if size > limit:
            problems.append(f"a {kind} key value of {size} bytes ({name!r}), over {limit}")
    return problems


def _check_value(name: str, value: dict[str, Any], depth: int) -> list[str]:
    if depth > NESTING_DEPTH:
        return [f"{name!r} nests deeper than {NESTING_DEPTH} levels"]
    problems = []
    for kind, inner in value.items():
        if kind == "N":
            problems += _check_number(name, inner)
        elif kind == "NS":
            for number in inner:
                problems += _check_number(name, number)
        elif kind in ("SS", "NS", "BS") and (not inner or len(set(inner)) < len(inner)):
            problems.append(f"{name!r}: a set must be non-empty, without duplicates")
        elif kind == "M":
            for member, member_value in inner.items():
                if not member or _utf8(member) > ATTRIBUTE_NAME_BYTES:
                    problems.append(f"{name!r}: a map member name of {_utf8(member)} bytes")
                problems += _check_value(f"{name}.{member}", member_value, depth + 1)
        elif kind == "L":
            for index, element in enumerate(inner):
                problems += _check_value(f"{name}[{index}]", element, depth + 1)
    return problems


def _check_number(name: str, text: str) -> list[str]:
    try:
        number = Decimal(text)
    except InvalidOperation:
        return [f"{name!r}: {text[:40]!r} is not a number"]
    if not number.is_finite():
        return [f"{name!r}: {text[:40]!r} is not a finite number"]
    digits = len("".join(map(str, number.as_tuple().digits)).strip("0") or "0")  # significant (no rounding)
    if digits > NUMBER_DIGITS:
        return [f"{name!r}: a number of {digits} significant digits, over {NUMBER_DIGITS}"]
    if number != 0 and not NUMBER_MIN_POSITIVE <= number.copy_abs() <= NUMBER_MAX:  # abs() would round to 28 digits
        return [f"{name!r}: {text[:40]} is outside DynamoDB's range (1E-130 to 9.99...E+125)"]
    return []


def _check_expression(field: str, expression: str) -> list[str]:
    problems = []
    if _utf8(expression) > EXPRESSION_BYTES:
        problems.append(f"{field} of {_utf8(expression)} bytes, over {EXPRESSION_BYTES}")
    operators = len(_OPERATORS.findall(expression))
    if operators > EXPRESSION_OPERATORS:
        problems.append(f"{field} with {operators} operators, over {EXPRESSION_OPERATORS}")
    for operands in re.finditer(r"\bIN\s*\(([^)]*)\)", expression, re.IGNORECASE):
        count = len(operands.group(1).split(","))
        if count > IN_OPERANDS:
            problems.append(f"{field}: IN with {count} operands, over {IN_OPERANDS}")
    return problems


def item_size(item: dict[str, Any]) -> int:
    """An item's size as DynamoDB counts it: each attribute's name and value, in bytes."""
    return sum(_utf8(name) + _value_size(value) for name, value in item.items())


def _value_size(value: dict[str, Any]) -> int:
    (kind, inner), *_ = value.items()
    if kind in ("S", "B", "N"):
        return _scalar_bytes(value)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "BS"):
        return sum(_scalar_bytes({kind[0]: element}) for element in inner)
    if kind == "NS":
        return sum(_scalar_bytes({"N": element}) for element in inner)
    if kind == "M":  # 3 bytes of overhead, plus each member's name and value
        return 3 + sum(_utf8(name) + 1 + _value_size(member) for name, member in inner.items())
    if kind == "L":
        return 3 + sum(1 + _value_size(element) for element in inner)
    return 0


def _scalar_bytes(value: dict[str, Any]) -> int:
    if "S" in value:
        return _utf8(value["S"])
    if "B" in value:
        raw = value["B"]
        return len(raw.encode() if isinstance(raw, str) else raw)
    if "N" in value:  # about one byte per two significant digits, plus one
        return len(str(value["N"]).lstrip("-").replace(".", "")) // 2 + 2
    return 0


def _utf8(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _frozen(key: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((name, repr(value)) for name, value in key.items()))


class LimitGuard:
    """Checks the requests of every botocore session made after :meth:`install`, remembering breaches."""

    def __init__(self) -> None:
        self.key_names: dict[str, tuple[str, ...]] = {}
        self.enforcing = True  # off for a test that breaks a limit on purpose
        self._breaches: list[str] = []
        self._lock = threading.Lock()

    def check(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        operation = model.name
        if operation == "CreateTable":
            schema = sorted(params.get("KeySchema", []), key=lambda element: element["KeyType"] != "HASH")
            self.key_names[params["TableName"]] = tuple(element["AttributeName"] for element in schema)
        problems = check_request(operation, params, self.key_names)
        if problems and self.enforcing:
            message = f"{operation} past DynamoDB's limits: {'; '.join(problems)}"
            with self._lock:
                self._breaches.append(message)
            raise DynamoDBLimitBreached(message)

    def take(self) -> list[str]:
        """The breaches since the last call."""
        with self._lock:
            breaches, self._breaches = self._breaches, []
        return breaches


def install(guard: LimitGuard) -> Callable[[], None]:
    """Make every botocore session created from now on check its DynamoDB requests; returns the undo."""
    original = botocore.session.Session.__init__

    def init(session: botocore.session.Session, *args: Any, **kwargs: Any) -> None:
        original(session, *args, **kwargs)
        session.register("before-parameter-build.dynamodb", guard.check)

    botocore.session.Session.__init__ = init  # type: ignore[method-assign]

    def undo() -> None:
        botocore.session.Session.__init__ = original  # type: ignore[method-assign]

    return undo
