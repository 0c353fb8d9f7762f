"""The in-process store's answers are moto's, byte for byte, written the short way (``in_memory_answers``)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from moto.core.responses import XFormedAttributePicker
from moto.core.serialize import JSONSerializer, get_serializer_class
from moto.core.utils import get_service_model

from dynalock_django.dynamodb import InMemoryDynamoDB
from dynalock_django.dynamodb.aws.in_memory_answers import fast_serializer

pytestmark = pytest.mark.unit

# Values as moto's backend holds them: a dict of one member name (binary as bytes or as text: either way).
names = st.text(max_size=6)
scalars = st.one_of(
    st.text(max_size=8).map(lambda text: {"S": text}),
    st.integers().map(lambda number: {"N": str(number)}),
    st.binary(max_size=8).map(lambda raw: {"B": raw}),
    st.binary(max_size=8).map(lambda raw: {"B": base64.b64encode(raw).decode()}),
    st.booleans().map(lambda flag: {"BOOL": flag}),
    st.just({"NULL": True}),
    st.lists(st.text(min_size=1, max_size=4), min_size=1, max_size=3, unique=True).map(lambda texts: {"SS": texts}),
    st.lists(st.integers().map(str), min_size=1, max_size=3, unique=True).map(lambda numbers: {"NS": numbers}),
    st.lists(st.binary(min_size=1, max_size=4), min_size=1, max_size=2, unique=True).map(
        lambda raws: {"BS": [base64.b64encode(raw).decode() for raw in raws]}
    ),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.dictionaries(names, inner, max_size=3).map(lambda members: {"M": members}),
        st.lists(inner, max_size=3).map(lambda items: {"L": items}),
    ),
    max_leaves=8,
)
items = st.dictionaries(names, values, max_size=4)


def answer(serializer: type[Any], operation: str, result: dict[str, Any]) -> Any:
    model = get_service_model("dynamodb").operation_model(operation)
    written = serializer(operation_model=model, pretty_print=False, value_picker=XFormedAttributePicker())
    return written.serialize(result)["body"]


@given(item=items, more=st.lists(items, max_size=2))
def test_every_item_is_answered_as_moto_answers_it(item: dict[str, Any], more: list[dict[str, Any]]) -> None:
    fast = fast_serializer()
    for operation, result in (
        ("GetItem", {"Item": item}),
        ("UpdateItem", {"Attributes": item}),
        ("Query", {"Items": [item, *more], "Count": 1 + len(more), "LastEvaluatedKey": item}),
        ("BatchGetItem", {"Responses": {"locks": [item, *more]}, "UnprocessedKeys": {}}),
    ):
        assert answer(fast, operation, result) == answer(JSONSerializer, operation, result)


def test_a_value_held_otherwise_is_written_the_long_way_as_moto_writes_it() -> None:
    # Spelt by its shape's name, or None, or of no member at all: the short way does not apply.
    odd = {"a": {"StringAttributeValue": "x"}, "b": {"S": None, "N": "1"}, "c": {"foreign": 1}, "d": {}}
    assert answer(fast_serializer(), "GetItem", {"Item": odd}) == answer(JSONSerializer, "GetItem", {"Item": odd})


def test_the_in_process_store_answers_with_it() -> None:
    InMemoryDynamoDB()
    assert get_serializer_class("dynamodb", "json").__name__ == fast_serializer().__name__
