"""A call's options, checked once: those of a call that gives none are kept, for the client's owner name then.

The kept options must follow the client: a new owner name (a forked child's, or set on the client)
is written by the next acquire, and a call's own options never outlast it.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.protocol


def test_the_next_acquire_writes_a_new_owner_name(make_client, dynamodb, key):
    client = make_client(dynamodb)
    client.acquire(key).release()
    client.owner_name = "renamed-owner"
    with client.acquire(key) as lease:
        assert lease.owner_name == "renamed-owner"
        assert client.get(key).owner_name == "renamed-owner"


def test_a_calls_own_options_are_its_alone(make_client, dynamodb, key):
    client = make_client(dynamodb, lease_duration=20.0, heartbeat_period=5.0)
    with client.acquire(key, owner_name="just-once", lease_duration=30.0, data=b"mine") as lease:
        assert (lease.owner_name, lease.lease_duration, lease.data) == ("just-once", 30.0, b"mine")
    with client.acquire(key) as lease:
        assert (lease.owner_name, lease.lease_duration, lease.data) == (client.owner_name, 20.0, None)
        stored = client.get(key)
        assert (stored.owner_name, stored.lease_duration, stored.data) == (client.owner_name, 20.0, None)
