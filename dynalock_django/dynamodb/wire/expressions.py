"""Builds DynamoDB expressions with placeholders for every name and value.

DynamoDB rejects placeholders that an expression does not use, and many of
our attribute names are reserved words, so every request goes through this.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any

# Probe: the builder's request of a shape for probe 0 or 1 (its last argument), and the values of its slots in it.
Probe = Callable[..., tuple[dict[str, Any], dict[str, Any]]]


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


class Shape:
    """A request of one shape, built once by its builder and filled per call: its expressions, names and constants
    shared by every call, its per-call values (*slots*) put in.

    The builder runs twice, on two *probes*: per slot, a value unlike every other (``probes``: slot -> value
    in each). A placeholder whose value is the same in both is a constant of the shape; one whose value
    is a slot's in both is that slot's; any other depends on the call in a way no slot says, and the
    shape refuses to be built. A filled shape is what the builder would build for those values,
    placeholders and all (the constants' dicts are shared: nothing changes a request once it is built).
    """

    def __init__(self, built: tuple[dict[str, Any], dict[str, Any]], probes: tuple[dict[str, Any], dict[str, Any]]):
        first, second = built
        values, other_values = first.get("ExpressionAttributeValues", {}), second.get("ExpressionAttributeValues", {})
        self._constants: dict[str, Any] = {}
        self._slots: list[tuple[str, str]] = []  # (placeholder, slot)
        for placeholder, value in values.items():
            slot = next((slot for slot, probe in probes[0].items() if probe == value), None)
            if slot is not None and probes[1][slot] == other_values[placeholder]:
                self._slots.append((placeholder, slot))
            elif value == other_values[placeholder]:
                self._constants[placeholder] = value
            else:
                raise ValueError(f"{placeholder} = {value!r} depends on the call through no slot")
        self._names = first.get("ExpressionAttributeNames", {})
        # The slots as two columns, so that a fill puts them in without a loop of its own.
        self._placeholders = tuple(placeholder for placeholder, _ in self._slots)
        self._slot_names = tuple(slot for _, slot in self._slots)
        self._fixed = {
            name: value
            for name, value in first.items()
            if name not in ("Key", "ExpressionAttributeNames", "ExpressionAttributeValues")
        }

    @classmethod
    def of(cls, kind: Hashable, probe: Probe, *args: Any) -> Shape:
        """The shape of requests of ``kind`` (built at its first use, from ``probe(*args, n)``: no probe need be
        made for the calls that find their shape built)."""
        shape = _SHAPES.get(kind)
        if shape is None:
            (first, first_slots), (second, second_slots) = probe(*args, 0), probe(*args, 1)
            if len(_SHAPES) >= MAX_SHAPES:  # clients of ever new tables: start over rather than grow without end
                _SHAPES.clear()
            shape = _SHAPES[kind] = cls((first, second), (first_slots, second_slots))
        return shape

    def fill(self, key: dict[str, Any], slots: dict[str, Any]) -> dict[str, Any]:
        """The request for the item ``key``, with ``slots``' values (slot -> value, as in the probes)."""
        values = dict(self._constants)
        values.update(zip(self._placeholders, map(slots.__getitem__, self._slot_names), strict=True))
        return {
            **self._fixed,
            "Key": key,
            "ExpressionAttributeNames": dict(self._names),
            "ExpressionAttributeValues": values,
        }


# The shapes built, by kind; two threads building the same one at once build equal shapes.
_SHAPES: dict[Hashable, Shape] = {}
# Shapes kept at most: a few per table a client of this process uses.
MAX_SHAPES = 1024
