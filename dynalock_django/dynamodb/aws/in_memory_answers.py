"""moto's answers to DynamoDB requests without its search of each attribute: the same JSON, a fraction of the CPU.

moto (5.2) writes every answer from the service's model, and for each member of each value it looks
for the member under up to six spellings (the shape's name, the member's, their snake_case, ...).
An item is a map of ``AttributeValue`` structures of ten members each, one of them set: a GetItem of
a lock's item cost about 6 ms of CPU, more than all the rest of the request (botocore's signing and
parsing, moto's parsing and its backend). The in-process store answers every request of the suite
and of a user's tests on :func:`~dynalock_django.testing.locks_in_memory`.

An ``AttributeValue`` that moto's backend hands over is a dict whose keys are member names (``{"S":
"x"}``, ``{"M": {...}}``): :func:`install` registers, for DynamoDB's JSON protocol, moto's own JSON
serializer with a short way for exactly such a dict: each member present written by moto's code
for its shape (base64 for binary, nested maps and lists the same way), and every other value the
long way. moto finds nothing under another spelling of a member that such a dict does not hold, so
the JSON is the same byte for byte (tests/dynamodb/aws/test_in_memory_answers.py compares both on
any value). A serializer someone else registered for DynamoDB is left in place.
"""

from __future__ import annotations

from typing import Any

SERVICE, PROTOCOL = "dynamodb", "json"
_ATTRIBUTE_VALUE = "AttributeValue"  # the shape's name in DynamoDB's model


def fast_serializer() -> type[Any]:
    """moto's JSON serializer with the short way for an ``AttributeValue`` held as a dict of member names."""
    from moto.core.serialize import JSONSerializer

    class AttributeValuesAsHeld(JSONSerializer):
        def _serialize_type_structure(self, serialized: Any, value: Any, shape: Any, key: str) -> None:
            if key and shape.name == _ATTRIBUTE_VALUE and self._held_as_members(value, shape):
                wrapper: dict[str, Any] = {}
                for name, member_shape in shape.members.items():
                    if name in value:
                        self._serialize(wrapper, value[name], member_shape, name)
                self._default_serialize(serialized, wrapper, shape, key)
                return
            super()._serialize_type_structure(serialized, value, shape, key)

        def _held_as_members(self, value: Any, shape: Any) -> bool:
            # A transformer of an answer's values (none for DynamoDB) would be skipped: the long way then.
            if type(value) is not dict or getattr(self._value_picker, "response_transformers", None):
                return False
            return all(name in shape.members and member is not None for name, member in value.items())

    return AttributeValuesAsHeld


def install() -> None:
    """Answer DynamoDB's JSON requests with :func:`fast_serializer` in this process, unless another is registered."""
    from moto.core import serialize

    registered = serialize.SERVICE_SPECIFIC_SERIALIZERS.setdefault(SERVICE, {})
    if PROTOCOL not in registered:
        registered[PROTOCOL] = fast_serializer()
