"""A readers-writer lock built before a fork (a module-level one under a pre-forking server) holds nothing of its
parent's in the child: the child's holds, reentrant or not, are its own."""

from __future__ import annotations

import pytest

from dynalock_django.dynamodb import WouldDeadlock

from ...dynamodb_support import LEASE
from ..test_fork import run_in_child

pytestmark = [
    pytest.mark.processes,
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning"),
]


def test_a_reentrant_writers_inner_release_in_a_forked_child_keeps_the_outer_hold(make_client, key):
    client = make_client(lease_duration=3 * LEASE)
    rw = client.readers_writer(key)  # built at import time, as docs/protocol.md's module-level example

    def in_child():
        outer = rw.acquire_write(timeout=5)
        inner = rw.acquire_write(timeout=5, reentrant=True)
        inner.release()
        stored = client.get(key)
        return {"outer_held": outer.is_held(), "stored_released": stored.is_released, "outer_state": outer.state}

    child = run_in_child(in_child)
    assert child == {"outer_held": True, "stored_released": False, "outer_state": "held"}


def test_a_forked_child_does_not_take_its_parents_write_hold_for_its_own(make_client, key):
    client = make_client(lease_duration=3 * LEASE)
    rw = client.readers_writer(key)
    writer = rw.acquire_write(timeout=5)

    def in_child():
        handle = rw.try_acquire_write(reentrant=True)
        fresh = client.readers_writer(key).try_acquire_write(reentrant=True)
        try:
            rw.acquire_read(timeout=0.5)
            read = "acquired"
        except WouldDeadlock:
            read = "WouldDeadlock"
        except Exception as error:
            read = type(error).__name__
        return {
            "handle": None if handle is None else handle.fencing_token,
            "fresh": None if fresh is None else fresh.fencing_token,
            "read": read,
        }

    child = run_in_child(in_child)
    writer.release()
    # Correct: the parent holds the lock, so the child gets nothing (None), and its reader times out.
    assert child == {"handle": None, "fresh": None, "read": "LockTimeout"}
