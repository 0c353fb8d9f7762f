"""Every kind of lock has the same verbs with the same options: wait, try, and both for coroutines.

``acquire``, ``try_acquire``, ``aacquire``, ``atry_acquire`` (a semaphore's permit), the same
four for a readers-writer lock's readers (``*_read``) and its writer (``*_write``): each takes
``lease_duration``, ``data`` and ``on_lost`` (the waits ``timeout`` too), and each try returns
None at once when the lock is taken.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

import pytest

from dynalock_django.dynamodb import Lease, LockClient, LockLost

from ...dynamodb_support import LEASE, RequestCounter

KINDS: dict[str, Callable[[LockClient, str], Any]] = {
    "semaphore": lambda client, key: client.semaphore(key, 1),
    "reader": lambda client, key: client.readers_writer(key),
    "writer": lambda client, key: client.readers_writer(key),
}
VERBS = {
    "semaphore": ("acquire", "try_acquire", "aacquire", "atry_acquire"),
    "reader": ("acquire_read", "try_acquire_read", "aacquire_read", "atry_acquire_read"),
    "writer": ("acquire_write", "try_acquire_write", "aacquire_write", "atry_acquire_write"),
}
CALLS = [(kind, verb) for kind, verbs in VERBS.items() for verb in verbs]
# Who keeps each kind out: another semaphore holder, a writer (of readers), a reader (of a writer).
IN_THE_WAY = {"semaphore": "acquire", "reader": "acquire_write", "writer": "acquire_read"}
# A lease no loaded machine's pause runs out, and not the client's own (LEASE): so that the option is seen taken.
PATIENT_LEASE = 60 * LEASE


def _call(lock: Any, verb: str, **options: Any) -> Lease | None:
    if not verb.startswith("try") and not verb.startswith("atry"):
        options["timeout"] = 5  # free: granted at once (a patient deadline: a loaded machine takes its time)
    result = getattr(lock, verb)(**options)
    return asyncio.run(result) if inspect.iscoroutine(result) else result  # type: ignore[no-any-return]


@pytest.mark.parametrize(("kind", "verb"), CALLS)
def test_every_verb_takes_the_same_options(make_client, key, kind, verb):
    client, operator = make_client(), make_client()
    lost: list[str | None] = []
    lease = _call(
        KINDS[kind](client, key),
        verb,
        lease_duration=PATIENT_LEASE,
        data=b"payload",
        on_lost=lambda lease: lost.append(lease.lost_reason),
    )
    assert lease is not None
    assert lease.is_held()
    assert lease.data == b"payload"
    assert lease.lease_duration == PATIENT_LEASE
    assert (lease.permit is None) == (kind == "writer")
    operator.force_release(operator.get(lease.key), released_by="an operator")
    with pytest.raises(LockLost):
        lease.extend()
    (reason,) = lost
    assert "an operator" in str(reason)


@pytest.mark.parametrize(("kind", "verb"), [call for call in CALLS if "try" in call[1]])
def test_every_try_returns_none_at_once_when_the_lock_is_taken(make_client, key, kind, verb):
    # Leases no loaded machine's pause runs out: the holder's in the way (a 1 s one can run out before the try,
    # which then wins), and the client's (a grant answered after its 1 s lease ran out is none, and the try after
    # the release gave None). What is asserted is the refusal and the grant, not renewal.
    holder, client = make_client(lease_duration=PATIENT_LEASE), make_client(lease_duration=PATIENT_LEASE)
    in_the_way = getattr(KINDS[kind](holder, key), IN_THE_WAY[kind])(timeout=0)
    assert _call(KINDS[kind](client, key), verb) is None
    assert client.held_leases() == []  # a writer kept out by a reader gave its write item back
    in_the_way.release()
    lease = _call(KINDS[kind](client, key), verb)
    assert lease is not None
    lease.release()


def test_a_writers_try_kept_out_by_a_reader_costs_its_grant_one_look_and_its_release(make_client, dynamodb, key):
    # The writer renews rarely, so its heartbeat never lands among the counted requests on a loaded machine.
    reader, writer = make_client(), make_client(dynamodb, lease_duration=60.0, heartbeat_period=20.0)
    read = reader.readers_writer(key).acquire_read(timeout=0)
    counter = RequestCounter(dynamodb)
    assert writer.readers_writer(key).try_acquire_write() is None
    assert counter.calls == {"UpdateItem": 2, "BatchGetItem": 1}  # the write item taken, the readers read, given back
    assert writer.get(key).is_released  # readers are let in again
    assert writer.held_leases() == []
    read.release()
