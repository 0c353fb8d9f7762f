"""An uncontended acquire's two requests, filled in from their shapes, are exactly what their builders build.

The shapes (``wire/expressions.py``'s ``Shape``) exist for the client's CPU: the expressions, names
and constants of an uncontended acquire and of its release are built once; each call puts in its
own values. Whatever a call's values, the request must be the one the general builder makes.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dynalock_django.dynamodb.wire import writes
from dynalock_django.dynamodb.wire.conditions import KeptAlive
from dynalock_django.dynamodb.wire.expressions import Shape
from dynalock_django.dynamodb.wire.item import new_version
from dynalock_django.dynamodb.wire.layout import TableLayout

pytestmark = pytest.mark.unit

LAYOUTS = [
    TableLayout("locks", "key", None, "ttl"),
    TableLayout("locks", "key", None, None),
    TableLayout("other", "pk", "sk", "expiresAt"),
]
texts = st.text(min_size=1, max_size=20)
stamps = st.builds(
    writes.Stamp,
    owner_name=texts,
    version=st.builds(new_version),
    lease_duration=st.floats(min_value=0.001, max_value=1e6),
    started=st.floats(min_value=0, max_value=1e6),
    wall_time=st.floats(min_value=0, max_value=4e9),
)


@given(
    layout=st.sampled_from(LAYOUTS),
    key=texts,
    sort_key=texts,
    stamp=stamps,
    data=st.none() | st.binary(max_size=30),
    held=st.builds(new_version),
)
def test_the_filled_requests_are_the_builders_own(layout, key, sort_key, stamp, data, held):
    lock_id = (key, sort_key if layout.sort_key_name else None)
    taking = {"data": data, "observed": None, "may_take_over": False, "pending": []}
    assert writes.acquire(layout, lock_id, stamp, **taking) == writes.acquire(
        layout, lock_id, stamp, **taking, shaped=False
    )
    holding = KeptAlive(stamp.owner_name, (held,))
    assert writes.release(layout, lock_id, stamp, holding=holding) == writes.release(
        layout, lock_id, stamp, holding=holding, shaped=False
    )


def test_a_value_that_depends_on_the_call_through_no_slot_refuses_the_shape():
    def probe(n):
        request = {"ExpressionAttributeValues": {":v0": {"S": f"version-{n}"}, ":v1": {"N": str(1000 + n)}}}
        return request, {"version": {"S": f"version-{n}"}}  # :v1 differs between the probes, yet is no slot

    with pytest.raises(ValueError, match=":v1"):
        Shape.of(("test", "a value outside the slots"), probe)


def test_a_record_version_is_a_random_uuid_of_version_4_as_the_java_client_writes_it():
    versions = {new_version() for _ in range(2000)}
    assert len(versions) == 2000
    for version in versions:
        parsed = uuid.UUID(version)
        assert (parsed.version, parsed.variant, str(parsed)) == (4, uuid.RFC_4122, version)
    # Every random digit takes every value (the 13th is the version's, the 17th holds the variant's bits).
    positions = [i for i, char in enumerate(next(iter(versions))) if char != "-"]
    for position in positions:
        seen = {version[position] for version in versions}
        expected = 1 if position == 14 else 4 if position == 19 else 16
        assert len(seen) == expected, position


def test_clients_of_ever_new_tables_keep_a_bounded_number_of_shapes(monkeypatch):
    from dynalock_django.dynamodb.wire import expressions

    monkeypatch.setattr(expressions, "MAX_SHAPES", 8)
    built: list[int] = []

    def probe_of(table):
        def probe(n):
            built.append(table)
            return {"ExpressionAttributeValues": {":v0": {"S": f"version-{n}"}}}, {"version": {"S": f"version-{n}"}}

        return probe

    for table in range(50):
        Shape.of(("bounded", table), probe_of(table))
    Shape.of(("bounded", 49), probe_of(49))  # one of the last: kept, not built again
    Shape.of(("bounded", 0), probe_of(0))  # one of the first: forgotten, built again
    assert (built.count(49), built.count(0)) == (2, 4)  # two probes a build
