"""A forked child never shares its parent's connections, heartbeat or leases."""

from __future__ import annotations

import asyncio
import json
import os
import time

import pytest

from ..dynamodb_support import LEASE, make_dynamodb

# Forking a process that runs threads is the very case under test (gunicorn --preload with a heartbeat).
pytestmark = [
    pytest.mark.processes,
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning"),
]


def run_in_child(check):
    """Fork; run ``check()`` in the child and return what it returned (JSON over a pipe)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read_end)
            os.write(write_end, json.dumps(check()).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        result = pipe.read()
    os.waitpid(pid, 0)
    return json.loads(result)


@pytest.mark.parametrize("pass_factory", [False, True], ids=["client-instance", "client-factory"])
def test_a_forked_child_has_its_own_owner_and_connection_and_none_of_the_parents_leases(
    endpoint_url, make_client, key, pass_factory
):
    # A lease of a few heartbeats more than the suite's: forking and a child's start load the machine for a moment.
    dynamodb = (lambda: make_dynamodb(endpoint_url)) if pass_factory else make_dynamodb(endpoint_url)
    client = make_client(dynamodb, lease_duration=3 * LEASE)
    lease = client.acquire(key)
    parent = {"owner": client.owner_name}
    parents_dynamodb = client.dynamodb  # kept alive in the child too: an id there cannot be reused by a new one

    def in_child():
        from dynalock_django.dynamodb import LockLost

        try:
            lease.release()
            released = "released"
        except LockLost as error:
            released = str(error)
        own = client.acquire(key + "-child", timeout=2)
        result = {
            "held": lease.is_held(),
            "release": released,
            "owner": client.owner_name,
            "own_dynamodb": client.dynamodb is not parents_dynamodb,
            "held_by_client": [lease.key for lease in client.held_leases()],
            "child_lease_owner": client.get(own.key).owner_name,
        }
        own.release()
        return result

    child = run_in_child(in_child)
    assert child["held"] is False
    assert "belongs to process" in child["release"]
    assert child["owner"] != parent["owner"]
    assert child["own_dynamodb"]
    assert child["held_by_client"] == [key + "-child"]
    assert child["child_lease_owner"] == child["owner"]
    # The parent's lease was neither released nor disturbed by the child.
    time.sleep(2 * LEASE)
    assert lease.is_held()
    assert client.get(key).owner_name == parent["owner"]
    assert lease.release() is True


def test_a_forked_child_waits_as_coroutines_on_call_threads_of_its_own(make_client, key):
    client = make_client()
    held = asyncio.run(client.aacquire(key))  # the parent's call threads exist now

    def in_child():
        async def take() -> list[object]:
            own = await client.aacquire(key + "-child", timeout=2)
            result = [own.owner_name == client.owner_name, await own.arelease()]
            return result

        return asyncio.run(take())

    assert run_in_child(in_child) == [True, True]
    assert asyncio.run(held.arelease()) is True
