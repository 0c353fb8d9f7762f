"""A key's turns among one client's waiters: an interrupt, wherever it lands, leaves no turn taken.

An exception from a signal handler (KeyboardInterrupt, a task's soft time limit, an alarm) can surface
between any two bytecodes, at a lock's release among them. A turn it stranded would make every later
acquire of the key in the process wait behind nobody until its deadline (forever without one).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from dynalock_django.dynamodb import LockClient
from dynalock_django.dynamodb.acquiring.turns import Turns


def interrupted(*, after_entering: bool) -> Callable[..., bool]:
    """``Turns._enter`` raising KeyboardInterrupt as a signal would: once the place is taken, or before."""
    enter = Turns._enter

    def enter_interrupted(self: Turns, *args: Any) -> bool:
        if after_entering:
            enter(self, *args)
        raise KeyboardInterrupt

    return enter_interrupted


# The two ways to wait for a turn: a thread's, and a coroutine's.
ACQUIRES: dict[str, Callable[[LockClient, str], object]] = {
    "thread": lambda client, key: client.acquire(key, timeout=5),
    "coroutine": lambda client, key: asyncio.run(client.aacquire(key, timeout=5)),
}


@pytest.mark.parametrize("waiter", ACQUIRES)
@pytest.mark.parametrize("after_entering", [True, False], ids=["once-in-line", "before-its-place"])
def test_an_interrupt_as_a_waiter_takes_its_turn_is_raised_and_leaves_the_turn_free(
    make_client: Callable[..., LockClient],
    key: str,
    monkeypatch: pytest.MonkeyPatch,
    after_entering: bool,
    waiter: str,
) -> None:
    client = make_client()
    with monkeypatch.context() as patched:
        patched.setattr(Turns, "_enter", interrupted(after_entering=after_entering))
        with pytest.raises(KeyboardInterrupt):  # as it came: not a KeyError of a place never taken
            ACQUIRES[waiter](client, key)
    client.acquire(key, timeout=0.5).release()  # a stranded turn: LockTimeout, the turn another's forever
