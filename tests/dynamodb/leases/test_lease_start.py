"""A lease counts from when its write was sent, never from when the answer came back.

A holder that counted from the answer would trust its lock one slow round trip longer than a
waiter's takeover rule allows: the window where two holders overlap. The client here runs on a
fake clock that a botocore hook moves on while each request is on the wire, so the two moments
differ by exactly :data:`ROUND_TRIP` per request, and ``remaining()`` tells which one was used.
"""

from __future__ import annotations

from typing import Any

import pytest

from dynalock_django.dynamodb import VirtualClock

LEASE = 60.0
ROUND_TRIP = 4.0  # seconds on the fake clock between sending a request and its answer
WRITES = ("UpdateItem", "TransactWriteItems")


class SlowWire:
    """Moves ``clock`` on by :data:`ROUND_TRIP` while each request of ``dynamodb`` is on the wire,
    and remembers when each write was sent."""

    def __init__(self, dynamodb: Any, clock: VirtualClock) -> None:
        self.clock = clock
        self.writes_sent: list[float] = []
        self.sent: list[tuple[str, float]] = []  # every request: operation, and when it was sent
        dynamodb.meta.events.register("before-send.dynamodb", self._sending)

    def _sending(self, event_name: str, **_: Any) -> None:
        operation = event_name.rsplit(".", 1)[-1]
        self.sent.append((operation, self.clock.monotonic()))
        if operation in WRITES:
            self.writes_sent.append(self.clock.monotonic())
        self.clock.advance(ROUND_TRIP)  # the answer arrives this much later


@pytest.fixture
def slow(make_client, endpoint_url):
    from ...dynamodb_support import make_dynamodb

    clock = VirtualClock()
    dynamodb = make_dynamodb(endpoint_url)
    wire = SlowWire(dynamodb, clock)
    # A heartbeat far off on this clock: only the writes each test makes move the lease.
    client = make_client(dynamodb, clock=clock, lease_duration=LEASE, heartbeat_period=LEASE / 3)
    return client, wire


def test_an_acquired_lease_counts_from_when_the_acquire_was_sent(slow, key):
    client, wire = slow
    lease = client.acquire(key, keep_alive=False)
    assert lease.safe_until == wire.writes_sent[-1] + LEASE
    assert lease.remaining() == LEASE - ROUND_TRIP
    lease.release()


def test_an_extended_lease_counts_from_when_the_renewal_was_sent(slow, key):
    client, wire = slow
    lease = client.acquire(key, keep_alive=False)
    wire.clock.advance(10.0)
    lease.extend()
    assert lease.safe_until == wire.writes_sent[-1] + LEASE
    assert lease.remaining() == LEASE - ROUND_TRIP
    lease.release()


def test_a_take_over_counts_from_when_it_was_sent(slow, make_client, key):
    client, wire = slow
    make_client().acquire(key, keep_alive=False)
    taken = client.take_over(client.get(key), keep_alive=False)
    assert taken.safe_until == wire.writes_sent[-1] + LEASE
    assert taken.remaining() == LEASE - ROUND_TRIP
    taken.release()


def test_a_group_counts_from_when_its_write_was_sent(slow, key, store):
    client, wire = slow
    names = [f"{key}-a", f"{key}-b"]
    group = client.try_acquire_many(names)
    assert group is not None
    # One TransactWriteItems (then one read of the tokens, a round trip more), or without
    # transactions one UpdateItem per key: each lease counts from the write that won it.
    if store.supports("transactions"):
        granted_at = [when for operation, when in wire.sent if operation == "TransactWriteItems"] * len(names)
    else:
        granted_at = [when for operation, when in wire.sent if operation == "UpdateItem"]
    assert len(granted_at) == len(names)
    for name, sent in zip(names, granted_at, strict=True):
        assert group[name].safe_until == sent + LEASE
    group.release()
