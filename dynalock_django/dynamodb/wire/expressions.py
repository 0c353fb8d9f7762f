"""Builds DynamoDB expressions with placeholders for every name and value.

DynamoDB rejects placeholders that an expression does not use, and many of
our attribute names are reserved words, so every request goes through this.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class Expressions:
    def __init__(self) -> None:
        self._names: dict[str, str] = {}
        self._placeholders: dict[str, str] = {}  # attribute -> its placeholder: a name is looked up at every use
        self._values: dict[str, Any] = {}

    def name(self, attribute: str) -> str:
        placeholder = self._placeholders.get(attribute)
        if placeholder is None:
            placeholder = self._placeholders[attribute] = f"#n{len(self._names)}"
            self._names[placeholder] = attribute
        return placeholder

    def value(self, attribute_value: Any) -> str:
        placeholder = f":v{len(self._values)}"
        self._values[placeholder] = attribute_value
        return placeholder

    def string(self, text: str) -> str:
        return self.value({"S": text})

    def number(self, number: int) -> str:
        return self.value({"N": str(number)})

    def one_of(self, attribute: str, strings: Iterable[str]) -> str:
        """``attribute IN (...)`` over string values; DynamoDB allows at most 100 operands."""
        placeholders = ", ".join(self.string(s) for s in list(strings)[-100:])
        return f"{self.name(attribute)} IN ({placeholders})"

    def params(self) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if self._names:
            params["ExpressionAttributeNames"] = dict(self._names)
        if self._values:
            params["ExpressionAttributeValues"] = dict(self._values)
        return params


def update_expression(sets: list[str], removes: list[str]) -> str:
    parts = []
    if sets:
        parts.append("SET " + ", ".join(sets))
    if removes:
        parts.append("REMOVE " + ", ".join(removes))
    return " ".join(parts)
