"""The wait loops (acquiring/wait_loop.py): what they own for every kind, whatever the round.

A wait whose deadline comes while another holder of this very client has the lock ends without
a request, naming that holder, for a single lock and for a group: in a thread on the virtual
clock, in a coroutine in real time (its wait for a local holder is the event loop's).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from dynalock_django.dynamodb import LockClient, LockTimeout

from ...dynamodb_support import RequestCounter
from .test_line import run_until_done, start_waiter

THREAD_WAITS: dict[str, Callable[[LockClient, list[str]], Any]] = {
    "acquire": lambda client, keys: client.acquire(keys[0], timeout=1),
    "acquire_many": lambda client, keys: client.acquire_many(keys, timeout=1),
}
COROUTINE_WAITS: dict[str, Callable[[LockClient, list[str]], Any]] = {
    "aacquire": lambda client, keys: client.aacquire(keys[0], timeout=0.3),
    "aacquire_many": lambda client, keys: client.aacquire_many(keys, timeout=0.3),
}


def _held_here(make_client: Callable[..., LockClient], dynamodb: Any, key: str, **options: Any) -> LockClient:
    # A long lease: nothing renews while the requests are counted.
    client = make_client(dynamodb, lease_duration=60, heartbeat_period=20, **options)
    client.acquire(key)
    return client


def _names_this_client(error: LockTimeout, client: LockClient) -> None:
    assert error.holder is not None
    assert error.holder.owner_name == client.owner_name


@pytest.mark.parametrize("wait", list(THREAD_WAITS))
def test_a_thread_whose_deadline_comes_while_this_client_holds_the_lock_sends_nothing(
    make_client, dynamodb, key, virtual_clock, wait
):
    client = _held_here(make_client, dynamodb, key, clock=virtual_clock)
    counter = RequestCounter(dynamodb)
    timed_out: list[LockTimeout] = []

    def waiter() -> None:
        with pytest.raises(LockTimeout) as raised:
            THREAD_WAITS[wait](client, [key, f"{key}-other"])
        timed_out.append(raised.value)

    run_until_done(virtual_clock, [start_waiter(virtual_clock, waiter)], seconds=5)
    assert counter.total == 0  # waited here, and gave up here: no request after the deadline either
    (error,) = timed_out
    _names_this_client(error, client)


@pytest.mark.parametrize("wait", list(COROUTINE_WAITS))
def test_a_coroutine_whose_deadline_comes_while_this_client_holds_the_lock_sends_nothing(
    make_client, dynamodb, key, wait
):
    client = _held_here(make_client, dynamodb, key)
    counter = RequestCounter(dynamodb)
    with pytest.raises(LockTimeout) as raised:
        asyncio.run(COROUTINE_WAITS[wait](client, [key, f"{key}-other"]))
    assert counter.total == 0
    _names_this_client(raised.value, client)
